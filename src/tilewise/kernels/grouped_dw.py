"""Grouped weight gradient: dw[e] = x[rows of e]^T @ dy[rows of e], one launch for all experts.

The backward of a grouped GEMM y[rows of e] = x[rows of e] @ w[e] needs two products:

* dx = dy @ w[e]^T per expert: the same grouped GEMM with w transposed (K and N swap roles,
  every expert still shares them), so it runs on `tilewise.kernels.grouped_gemm`;
* dw[e] = x_e^T @ dy_e: here the *reduction* dimension is the expert's rows, different for
  every expert, while the output [K, N] has one shape for all. That is this file's kernel.

One program owns one [BLOCK_K, BLOCK_N] tile of one expert's gradient (grid: K x N tiles, E) and
walks that expert's rows in steps of BLOCK_T, so nothing is written but the result, and an expert
that got no rows writes zeros (its gradient is exactly zero). With `splits` > 1 the rows of every
expert are cut into that many chunks (a third grid axis) that add fp32 partials with atomics, for
the layers whose K x N x E tiles do not fill the GPU (MH-MoE's down projection: d_h 128 x f 256
at BLOCK 128 is 2 tiles per expert, 128 programs for 64 experts on 132 SMs).

The MoE backward reads its operands where the forward left them, as the forward GEMMs do:
`x_gather` / `dy_gather` give the row of x / dy that sorted position r reads (gather[r] //
gather_div: a token slot t k + j reads token t), and `dy_scale` [rows] multiplies row r of dy
(the routing weight of that slot), so the permuted copies are never written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from tilewise.errors import InputError
from tilewise.kernels.utils import sm_count
from tilewise.util import cdiv

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


# ------------------------------------------------------------------------ config choice


@dataclass(frozen=True)
class DwConfig:
    block_k: int  # rows of dw per tile (the MMA's M)
    block_n: int  # columns of dw per tile (the MMA's N)
    block_t: int  # token rows per step (the MMA's K)
    num_warps: int
    num_stages: int


def choose_dw_config(k: int, n: int, dtype: torch.dtype, on_gpu: bool = True) -> DwConfig:
    """A tile for dw [K, N].

    Interpreter: small tiles so the tests cross tile and expert edges. GPU: 128 x 128 tiles with
    64-row steps for 16-bit data (one wgmma warpgroup pair, 3 stages of (128 + 128) x 64 x 2 B =
    96 KiB of shared memory); 64-wide when K or N is at most 64 (MH-MoE's d_h 64), and 32-row
    steps for fp32 (the same shared memory at twice the bytes per element).
    """
    if not on_gpu:
        return DwConfig(32, 32, 16, 4, 1)
    bk = 128 if k > 64 else 64
    bn = 128 if n > 64 else 64
    bt = 32 if dtype == torch.float32 else 64
    warps = 8 if bk * bn >= 128 * 128 else 4
    return DwConfig(bk, bn, bt, warps, 3)


def choose_splits(rows: int, experts: int, k: int, n: int, cfg: DwConfig, sms: int) -> int:
    """Row splits so the grid has about 2 programs per SM, each still walking >= 8 row steps."""
    tiles = cdiv(k, cfg.block_k) * cdiv(n, cfg.block_n) * experts
    steps = max(1, rows // max(1, experts) // cfg.block_t)
    return max(1, min(cdiv(2 * sms, tiles), steps // 8))


# ------------------------------------------------------------------------------ kernel


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _grouped_dw_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # pointers
    x_ptr,  # [T_x, K]
    dy_ptr,  # [T_dy, N]
    dw_ptr,  # [E, K, N] out (dw dtype), or fp32 [E, K, N] zeros (ATOMIC)
    offsets_ptr,  # int32 [E] cumulative row ends in sorted order
    x_gather_ptr,  # int [rows]: x row of sorted position r is x_gather[r] // gather_div (X_GATHER)
    dy_gather_ptr,  # int [rows]: dy row of sorted position r is dy_gather[r] // gather_div (DY_GATHER)
    scale_ptr,  # fp32 [rows]: factor of dy's sorted row r (SCALE)
    # sizes
    gather_div,
    K,
    N,
    rows_per_split,  # sorted rows one split of an expert walks (a multiple of BLOCK_T)
    # strides
    stride_xt,
    stride_xk,
    stride_dyt,
    stride_dyn,
    stride_we,
    stride_wk,
    stride_wn,
    # meta-parameters
    BLOCK_K: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_T: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    X_GATHER: tl.constexpr,
    DY_GATHER: tl.constexpr,
    SCALE: tl.constexpr,
    ATOMIC: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    pid = tl.program_id(0)
    e = tl.program_id(1)
    split = tl.program_id(2)
    n_tiles = tl.cdiv(N, BLOCK_N)
    pid_k = pid // n_tiles
    pid_n = pid % n_tiles
    row_end = tl.load(offsets_ptr + e)
    row_start = tl.where(e > 0, tl.load(offsets_ptr + tl.maximum(e - 1, 0)), 0)
    lo = row_start + split * rows_per_split
    hi = tl.minimum(row_end, lo + rows_per_split)
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k_mask = offs_k < K
    n_mask = offs_n < N
    acc = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)
    for t0 in tl.range(lo, hi, BLOCK_T, num_stages=NUM_STAGES):
        offs_t = t0 + tl.arange(0, BLOCK_T)
        t_mask = offs_t < hi
        if X_GATHER:
            xr = tl.load(x_gather_ptr + offs_t, mask=t_mask, other=0).to(tl.int64) // gather_div
        else:
            xr = offs_t.to(tl.int64)
        if DY_GATHER:
            dr = tl.load(dy_gather_ptr + offs_t, mask=t_mask, other=0).to(tl.int64) // gather_div
        else:
            dr = offs_t.to(tl.int64)
        # x^T tile [BLOCK_K, BLOCK_T]: K runs along x's rows (unit stride), so the loads stay coalesced
        a = tl.load(
            x_ptr + xr[None, :] * stride_xt + offs_k[:, None] * stride_xk,
            mask=k_mask[:, None] & t_mask[None, :],
            other=0.0,
        )
        b = tl.load(
            dy_ptr + dr[:, None] * stride_dyt + offs_n[None, :] * stride_dyn,
            mask=t_mask[:, None] & n_mask[None, :],
            other=0.0,
        )
        if SCALE:
            s = tl.load(scale_ptr + offs_t, mask=t_mask, other=0.0)
            b = (b.to(tl.float32) * s[:, None]).to(dy_ptr.dtype.element_ty)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    w_ptrs = dw_ptr + e.to(tl.int64) * stride_we + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn
    mask = k_mask[:, None] & n_mask[None, :]
    if ATOMIC:
        tl.atomic_add(w_ptrs, acc, mask=mask)
    else:
        tl.store(w_ptrs, acc.to(dw_ptr.dtype.element_ty), mask=mask)


# ----------------------------------------------------------------------- launcher with checks


def check_grouped_matmul_dw(
    x: Any, dy: Any, offsets: Any, x_gather: Any, dy_gather: Any, dy_scale: Any, gather_div: Any
) -> None:
    """The input checks (no device queries: the fake impl of torch.ops.tilewise.grouped_matmul_dw runs them)."""
    for name, t in (("x", x), ("dy", dy), ("offsets", offsets)):
        if not isinstance(t, torch.Tensor):
            raise InputError(f"grouped_matmul_dw: {name} must be a torch.Tensor, got {type(t).__name__}")
    if x.dim() != 2 or dy.dim() != 2:
        raise InputError(
            f"grouped_matmul_dw: x and dy must be 2-D ([rows, K], [rows, N]), got {list(x.shape)} and {list(dy.shape)}"
        )
    if x.dtype not in _DTYPES or dy.dtype != x.dtype:
        raise InputError(
            f"grouped_matmul_dw: x and dy must share one of float16, bfloat16, float32, got {x.dtype} and {dy.dtype}"
        )
    if offsets.dim() != 1 or offsets.dtype != torch.int32 or offsets.shape[0] < 1:
        raise InputError(
            f"grouped_matmul_dw: offsets must be int32 [experts >= 1], got {offsets.dtype} {list(offsets.shape)}"
        )
    for name, t in (("x_gather", x_gather), ("dy_gather", dy_gather), ("dy_scale", dy_scale)):
        if t is not None and (not isinstance(t, torch.Tensor) or t.dim() != 1):
            raise InputError(f"grouped_matmul_dw: {name} must be a 1-D tensor or None, got {t!r:.80}")
    if x_gather is None and dy_gather is None and x.shape[0] != dy.shape[0]:
        raise InputError(f"grouped_matmul_dw: x and dy must have the same rows, got {x.shape[0]} and {dy.shape[0]}")
    if isinstance(gather_div, bool) or not isinstance(gather_div, int) or gather_div < 1:
        raise InputError(f"grouped_matmul_dw: gather_div must be an integer >= 1, got {gather_div!r}")
    devs = {t.device for t in (x, dy, offsets, x_gather, dy_gather, dy_scale) if t is not None}
    if len(devs) != 1:
        raise InputError(f"grouped_matmul_dw: all tensors must be on one device, got {sorted(map(str, devs))}")


def dw_rows(x: torch.Tensor, dy: torch.Tensor, x_gather: Any, dy_gather: Any) -> int:
    """Sorted rows the product walks: the gather's length, else the rows of x (or dy)."""
    if x_gather is not None:
        return int(x_gather.shape[0])
    if dy_gather is not None:
        return int(dy_gather.shape[0])
    return int(x.shape[0])


def grouped_matmul_dw(
    x: torch.Tensor,
    dy: torch.Tensor,
    offsets: torch.Tensor,
    *,
    x_gather: torch.Tensor | None = None,
    dy_gather: torch.Tensor | None = None,
    gather_div: int = 1,
    dy_scale: torch.Tensor | None = None,
    splits: int | None = None,
    config: DwConfig | None = None,
) -> torch.Tensor:
    """dw [E, K, N] with dw[e] = X_e^T @ DY_e over the sorted rows offsets[e-1] .. offsets[e].

    x: [T_x, K], dy: [T_dy, N], one of float16 / bfloat16 / float32 (fp32 runs its dots as tf32 on
    the GPU, like `grouped_matmul`). Sorted row r reads x row r (or x_gather[r] // gather_div) and dy
    row r (or dy_gather[r] // gather_div) times dy_scale[r]. offsets: int32 [E] cumulative row ends
    (values are trusted: no host sync, so it runs inside CUDA graphs). Rows past offsets[-1] are
    ignored; an expert without rows gets zeros. Returns dw in x's dtype, accumulated in fp32.
    """
    check_grouped_matmul_dw(x, dy, offsets, x_gather, dy_gather, dy_scale, gather_div)
    K, N, E = x.shape[1], dy.shape[1], offsets.shape[0]
    rows = dw_rows(x, dy, x_gather, dy_gather)
    cfg = config or choose_dw_config(K, N, x.dtype, on_gpu=x.is_cuda)
    if splits is None:
        splits = choose_splits(rows, E, K, N, cfg, sm_count(x.device))
    rows_per_split = cdiv(cdiv(max(rows, 1), splits), cfg.block_t) * cfg.block_t
    atomic = splits > 1
    if atomic:
        dw = torch.zeros((E, K, N), dtype=torch.float32, device=x.device)
    else:
        dw = torch.empty((E, K, N), dtype=x.dtype, device=x.device)
    dummy = offsets
    grid = (cdiv(K, cfg.block_k) * cdiv(N, cfg.block_n), E, splits)
    _grouped_dw_kernel[grid](
        x, dy, dw, offsets,
        x_gather if x_gather is not None else dummy,
        dy_gather if dy_gather is not None else dummy,
        dy_scale if dy_scale is not None else dummy,
        gather_div, K, N, rows_per_split if atomic else max(rows, 1),
        x.stride(0), x.stride(1), dy.stride(0), dy.stride(1), dw.stride(0), dw.stride(1), dw.stride(2),
        BLOCK_K=cfg.block_k, BLOCK_N=cfg.block_n, BLOCK_T=cfg.block_t, NUM_STAGES=cfg.num_stages,
        X_GATHER=x_gather is not None, DY_GATHER=dy_gather is not None, SCALE=dy_scale is not None,
        ATOMIC=atomic, INPUT_PRECISION="tf32" if x.dtype == torch.float32 and x.is_cuda else "ieee",
        num_warps=cfg.num_warps,
    )  # fmt: skip
    return dw.to(x.dtype) if atomic else dw


__all__ = [
    "DwConfig",
    "check_grouped_matmul_dw",
    "choose_dw_config",
    "choose_splits",
    "dw_rows",
    "grouped_matmul_dw",
]
