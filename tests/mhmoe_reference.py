"""The specification of MH-MoE's expert FFN: a plain loop over experts, in any dtype (float64 in the tests).

Kept beside the tests (not in the kernel module): it is what the grouped-GEMM forward and backward
are measured against. Differentiable, so torch's autograd of this loop in float64 is the reference
for `tilewise.kernels.mhmoe.experts_backward`.
"""

from __future__ import annotations

import torch


def experts_forward_loop(
    z: torch.Tensor,
    weights: torch.Tensor,
    experts: torch.Tensor,
    w_gate_up: torch.Tensor,
    w_down: torch.Tensor,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """z [R, d], weights [R, k], global experts int [R, k] -> sum_j weights[r, j] FFN_{experts[r, j]}(z[r])."""
    dtype = dtype or z.dtype
    f = w_down.shape[1]
    zd = z.to(dtype)
    out = torch.zeros(z.shape, dtype=dtype, device=z.device)
    for e in torch.unique(experts).tolist():
        row, slot = torch.nonzero(experts == e, as_tuple=True)
        g = zd[row] @ w_gate_up[e, :, :f].to(dtype)
        u = zd[row] @ w_gate_up[e, :, f:].to(dtype)
        y = (torch.nn.functional.silu(g) * u) @ w_down[e].to(dtype)
        out = out.index_add(0, row, y * weights[row, slot].to(dtype)[:, None])
    return out
