"""The specification of split-KV decode attention: each sequence's first lens[b] keys, in float64.

Kept beside the tests (not in the kernel module): the CPU interpreter tests and the GPU tests of
`tilewise.kernels.decode.decode_attention` (both merge placements, the one-launch merge) all check against it.
"""

from __future__ import annotations

import math
from typing import Any

import torch


def decode_reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lens: Any, scale: float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """q [B, Hq, (1,) d], k and v [B, Hkv, L, d] -> (out [B, Hq, d], lse [B, Hq]) in float64 on q's device.

    GQA: query head h reads K/V head h // (Hq / Hkv). An empty sequence gives out 0 and lse -inf.
    """
    q3 = q.reshape(q.shape[0], q.shape[1], q.shape[-1]).double()
    b_, hq, d = q3.shape
    hk = k.shape[1]
    sc = (1.0 / math.sqrt(d)) if scale is None else scale
    out = torch.zeros(b_, hq, d, dtype=torch.float64, device=q.device)
    lse = torch.full((b_, hq), float("-inf"), dtype=torch.float64, device=q.device)
    for b in range(b_):
        n = int(lens[b])
        if n == 0:
            continue
        kk = k[b, :, :n].double().repeat_interleave(hq // hk, 0)
        vv = v[b, :, :n].double().repeat_interleave(hq // hk, 0)
        s = torch.einsum("hd,hnd->hn", q3[b], kk) * sc
        lse[b] = torch.logsumexp(s, -1)
        out[b] = torch.einsum("hn,hnd->hd", torch.exp(s - lse[b][:, None]), vv)
    return out, lse
