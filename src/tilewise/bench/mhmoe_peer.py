"""The peer of MultiHeadMoE's expert FFN: the same routing on torch._grouped_mm, glue in torch.

Benchmarks time tilewise's grouped GEMMs against it (CUDA, Hopper: torch._grouped_mm needs sm_90);
with autograd on it trains through torch's own formulas, so `benchmarks/mhmoe_train.py` uses it as
the forward + backward peer. Not part of the kernels: the spec and the peer live beside their users.
"""

from __future__ import annotations

from typing import Any

import torch


def experts_forward_torch(z: torch.Tensor, p: Any, w_gate_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """z [R, d_h] routed by `p` (a `tilewise.kernels.mhmoe.Plan`) -> [R, d_h]: gather, two grouped GEMMs,
    SiLU * mul, routing weight, scatter back to slot order and the sum over the k slots of each row."""
    R, d = z.shape
    f = w_down.shape[1]
    xs = z[p.token_of.long()]  # [R k, d_h] expert order
    gu = torch._grouped_mm(xs, w_gate_up, offs=p.offsets)
    a = torch.nn.functional.silu(gu[:, :f]) * gu[:, f:]
    ys = torch._grouped_mm(a, w_down, offs=p.offsets) * p.scale[:, None].to(z.dtype)
    y = torch.zeros((R * p.top_k, d), dtype=z.dtype, device=z.device).index_copy(0, p.slot_of.long(), ys)
    return y.view(R, p.top_k, d).sum(dim=1)


__all__ = ["experts_forward_torch"]
