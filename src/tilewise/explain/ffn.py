"""`tilewise explain ffn`: FlashFFN, the fused multi-head FFN, reasoned the way the tips document does.

Placeholder while the report is written; the counts below are final.
"""

from __future__ import annotations

from tilewise.gpus import element_bytes
from tilewise.model import traffic

# ------------------------------------------------------------------ counts (to move to model/traffic.py)


def mhffn_backward_flops(tokens: int, heads: int, head_dim: int, intermediate: int, mode: str = "useful") -> int:
    """Backward FLOPs of the per-head SwiGLU FFN, in units of one per-head GEMM U = 2 T H d_h I.

    * "useful": what autograd of the unfused layer computes: dWd, da, dz (2), dWg, dWu = 6 U;
    * "split": FlashFFN's two-kernel backward: dW kernel (recompute g, u, da; dWd, dWg, dWu = 6 U)
      plus dz kernel (recompute g, u, da; dz = dg Wg^T + du Wu^T = 5 U) = 11 U;
    * "atomic": one kernel (recompute g, u, da; three dW; dz with atomics) = 8 U.
    """
    u = 2 * tokens * heads * head_dim * intermediate
    units = {"useful": 6, "split": 11, "atomic": 8}
    if mode not in units:
        raise ValueError(f"mode must be one of {sorted(units)}, got {mode!r}")
    return units[mode] * u


def mhffn_backward_bytes(tokens: int, heads: int, head_dim: int, intermediate: int, dtype: str = "bf16") -> int:
    """Fused backward: z and dy read, the three weights read, dz and the three weight gradients written."""
    e = element_bytes(dtype)
    act = 3 * tokens * heads * head_dim
    w = 6 * heads * head_dim * intermediate
    return (act + w) * e


def mhffn_unfused_backward_bytes(tokens: int, heads: int, head_dim: int, intermediate: int, dtype: str = "bf16") -> int:
    """Unfused backward: the fused bytes plus the [T, H, I] tensors autograd reads and writes.

    Read a (for dWd), write da; read da, g, u; write dg, du; read dg, du (dz GEMM) and again
    (dWg, dWu GEMMs): 10 passes over a [T, H, I] tensor.
    """
    inter = tokens * heads * intermediate * element_bytes(dtype)
    return mhffn_backward_bytes(tokens, heads, head_dim, intermediate, dtype) + 10 * inter


def dense_swiglu_flops(tokens: int, d_model: int, intermediate: int) -> int:
    """Dense SwiGLU x [T, d] -> [T, I] gate and up -> [T, d]: 3 GEMMs of 2 T d I."""
    return 3 * traffic.gemm_flops(tokens, intermediate, d_model)
