"""FlashFFN: the fused multi-head SwiGLU FFN, forward and backward.

The layer (README, "FlashFFN"): x [T, D] -> z = x W_in viewed as [T, H, d_h]; per head h

    y_h = (silu(z_h Wg_h) * (z_h Wu_h)) Wd_h        Wg_h, Wu_h [d_h, I], Wd_h [I, d_h]

and out = concat_h(y_h) W_out (the module: `tilewise.kernels.layers.MultiHeadFFN`). `flash_ffn` computes z -> y tiled like FlashAttention's forward:
one program owns BLOCK_M token rows of one head (z tile [BLOCK_M, d_h] and the fp32 accumulator
[BLOCK_M, d_h] stay on chip) and walks the intermediate dimension I in chunks of BLOCK_N: two
up-projections ([BLOCK_M, BLOCK_N] each, fp32 in registers), SiLU * mul in registers, then the
down-projection accumulated into y. The [T, H, I] intermediate never reaches HBM.

The mapping onto FlashAttention's forward: z is Q, Wg/Wu are K^T (two of them),
Wd is V, the chunk BLOCK_N is the KV tile's N (it sets the register cost of the [64, N] fp32
up-projections, exactly like S), BLOCK_M is the M that sets the HBM intensity against the weights,
and every token block of a head reads the same weights, so L2 reuse decides the HBM traffic.

The backward recomputes the intermediate chunk by chunk (as FlashAttention recomputes S) instead
of storing it:

* `_bwd_dz_kernel` (row-stationary like the forward): dz = dg Wg^T + du Wu^T, walking I;
* `_bwd_dw_kernel` (column-stationary, one I chunk of one head, walking the token blocks of a
  T split): dWg = z^T dg, dWu = z^T du, dWd = a^T dy, written directly in the weights' dtype, or
  as fp32 partials that `_dw_finish_kernel` sums when the tokens are split (too few I chunks x
  heads to fill the SMs); optionally it also adds its chunk's share of dz with fp32 atomics
  (`mode="atomic"`, 8 GEMM units of 2 T H d_h I instead of 11, but slower on the H200: below).

Shapes: z [T, H, d_h]; w_gate, w_up [H, d_h, I]; w_down [H, I, d_h]; bf16, fp16 (fp32 is accepted
too and runs its dots as tf32 on the GPU). d_h in {64, 128}; any T and I.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from tilewise.errors import InputError
from tilewise.kernels.utils import Launcher, PlanCache, signature, sm_count
from tilewise.util import cdiv

HEAD_DIMS = (64, 128)
DTYPES = (torch.bfloat16, torch.float16, torch.float32)
MODES = ("split", "atomic")

# --------------------------------------------------------------------------- helpers


def _empty(shape: tuple[int, ...], device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """Every output the kernels write in full is allocated here (the tests poison it with NaN)."""
    return torch.empty(shape, device=device, dtype=dtype)


# The kernels' shared pieces, inlined by Triton where they are called.


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _row_ptrs(X, rows, h, stride_t, stride_h, offs_d):  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    """Pointers to the [BLOCK_M, D] tile of head h at token rows `rows` of a [T, H, D] tensor (unit last stride)."""
    return X + rows[:, None] * stride_t + h * stride_h + offs_d[None, :]


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _up_ptrs(W, h, offs_d, offs_n, D: tl.constexpr, I):  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    """Pointers to the [D, BLOCK_N] chunk (columns offs_n) of head h of a contiguous [H, D, I] weight: Wg, Wu."""
    return W + h * D * I + offs_d[:, None] * I + offs_n[None, :]


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _down_t_ptrs(W, h, offs_d, offs_n, D: tl.constexpr, I):  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    """Pointers to the same chunk of Wd^T, in a contiguous [H, I, D] weight: Wd's rows offs_n, as columns."""
    return W + h * I * D + offs_n[None, :] * D + offs_d[:, None]


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _load_tile(ptrs, mask, EVEN: tl.constexpr):  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    """A tile of z, dy or a weight chunk; elements off the mask (rows past T, columns past I) read as zero, and
    zeros add nothing to any product (g = u = da = 0 there, so a = 0). EVEN: every element is in, no mask."""
    if EVEN:
        x = tl.load(ptrs)
    else:
        x = tl.load(ptrs, mask=mask, other=0.0)
    return x


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _store_tile(ptrs, x, mask, EVEN: tl.constexpr):  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    """Write a tile of y or dz, none of its rows past T."""
    if EVEN:
        tl.store(ptrs, x)
    else:
        tl.store(ptrs, x, mask=mask)


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _swiglu_grads(g, u, da, sig, dtype):  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    """(du, dg) of a = silu(g) * u given da and sig = sigmoid(g), cast to `dtype` (tl.float32: left as computed):
    du = da silu(g) = da g sig, dg = da u silu'(g) with silu'(g) = sig (1 + g (1 - sig))."""
    du = (da * g * sig).to(dtype)
    dg = (da * u * sig * (1.0 + g * (1.0 - sig))).to(dtype)
    return du, dg


# ---------------------------------------------------------------------- config choice


@dataclass(frozen=True)
class Config:
    """Tile sizes and launch parameters of one kernel."""

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int

    def kwargs(self) -> dict[str, Any]:
        return dict(BLOCK_M=self.block_m, BLOCK_N=self.block_n, num_warps=self.num_warps, num_stages=self.num_stages)


# The tiles and the rows that chose them: tests/data/tuning/ffn.md (H200, triton 3.6, bf16, 2026-11-30).
# forward: 128 token rows x 64 intermediate columns (262 us at d_h 128, T 16384, H 16, I 512: 394 TFLOP/s).
_FWD = {
    64: Config(block_m=128, block_n=64, num_warps=4, num_stages=3),
    128: Config(block_m=128, block_n=64, num_warps=8, num_stages=3),
}
_BWD_DZ = {
    64: Config(block_m=64, block_n=64, num_warps=4, num_stages=3),
    128: Config(block_m=128, block_n=64, num_warps=8, num_stages=3),
}
_BWD_DW = {
    64: Config(block_m=128, block_n=64, num_warps=8, num_stages=2),
    128: Config(block_m=128, block_n=64, num_warps=8, num_stages=2),
}
# "atomic" (dz by fp32 atomics from the dW kernel) lost on the H200 (1461 vs 1042 us at d_h 128); its dW
# kernel also holds the dz partial, so it keeps its own tiles (128-token steps need 240 KB of shared memory).
_BWD_DW_ATOMIC = {
    64: Config(block_m=128, block_n=64, num_warps=8, num_stages=2),
    128: Config(block_m=64, block_n=32, num_warps=4, num_stages=3),
}
MODE = "split"  # the default backward mode
# fp32 rows are twice as wide as the 16-bit ones the tiles above were measured with: compiled for sm_90 with
# triton 3.6, the d_h 128 forward, dz and dW kernels asked for 360,448 B of shared memory at 4 bytes (limit
# 232,448). fp32 (slow, TF32 dots) takes 64 x 32 tiles in 2 stages for every kernel and head dim.
_FP32 = Config(block_m=64, block_n=32, num_warps=4, num_stages=2)


def _tiles(table: dict[int, Config], head_dim: int, dtype: torch.dtype) -> Config:
    return _FP32 if dtype == torch.float32 else table[head_dim]


def fwd_config(head_dim: int, dtype: torch.dtype = torch.bfloat16) -> Config:
    return _tiles(_FWD, head_dim, dtype)


def bwd_configs(head_dim: int, dtype: torch.dtype = torch.bfloat16) -> tuple[Config, Config]:
    return _tiles(_BWD_DZ, head_dim, dtype), _tiles(_BWD_DW, head_dim, dtype)


def dw_splits(tokens: int, heads: int, intermediate: int, cfg: Config, sms: int) -> int:
    """How many token splits the dW kernel needs so its grid covers about two waves of the SMs.

    The dW grid is ceil(I / BLOCK_N) x H programs: 8 x 16 = 128 at I = 512, fewer than the 132 SMs
    of an H100/H200. Each split adds one fp32 partial of the three weight gradients.
    """
    tiles = cdiv(intermediate, cfg.block_n) * heads
    blocks = cdiv(tokens, cfg.block_m)
    return max(1, min(blocks, cdiv(2 * sms, tiles)))


# ---------------------------------------------------------------------------- kernels


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _fwd_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # pointers
    Z,
    WG,
    WU,
    WD,
    Y,
    # sizes
    T,
    I,
    # strides (the last dimension of z and y is contiguous; weights are contiguous)
    stride_zt,
    stride_zh,
    stride_yt,
    stride_yh,
    # meta-parameters
    D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    EVEN_M: tl.constexpr,
    EVEN_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    h = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK_N)
    rows = offs_m.to(tl.int64)

    z_ptrs = _row_ptrs(Z, rows, h, stride_zt, stride_zh, offs_d)
    z = _load_tile(z_ptrs, offs_m[:, None] < T, EVEN_M)  # [BLOCK_M, D]: stays on chip for the whole walk over I

    wg_ptrs = _up_ptrs(WG, h, offs_d, offs_n, D, I)  # [D, BLOCK_N]
    wu_ptrs = _up_ptrs(WU, h, offs_d, offs_n, D, I)
    wd_ptrs = WD + h * I * D + offs_n[:, None] * D + offs_d[None, :]  # [BLOCK_N, D]
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for n0 in range(0, I, BLOCK_N):
        nmask = (n0 + offs_n) < I  # unused (and not computed) when EVEN_N
        wg = _load_tile(wg_ptrs, nmask[None, :], EVEN_N)
        wu = _load_tile(wu_ptrs, nmask[None, :], EVEN_N)
        wd = _load_tile(wd_ptrs, nmask[:, None], EVEN_N)
        g = tl.dot(z, wg)  # [BLOCK_M, BLOCK_N] fp32, registers only
        u = tl.dot(z, wu)
        a = g * tl.sigmoid(g) * u  # silu(g) * u
        acc = tl.dot(a.to(wd.dtype), wd, acc)  # down-projection accumulated on chip
        wg_ptrs += BLOCK_N
        wu_ptrs += BLOCK_N
        wd_ptrs += BLOCK_N * D

    y_ptrs = _row_ptrs(Y, rows, h, stride_yt, stride_yh, offs_d)
    _store_tile(y_ptrs, acc.to(Y.dtype.element_ty), offs_m[:, None] < T, EVEN_M)


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _bwd_dz_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # pointers
    Z,
    DY,
    WG,
    WU,
    WD,
    DZ,
    # sizes
    T,
    I,
    # strides
    stride_zt,
    stride_zh,
    stride_dyt,
    stride_dyh,
    stride_dzt,
    stride_dzh,
    # meta-parameters
    D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    EVEN_M: tl.constexpr,
    EVEN_N: tl.constexpr,
):
    """dz for BLOCK_M token rows of one head, recomputing g and u chunk by chunk (5 GEMMs per chunk)."""
    pid_m = tl.program_id(0)
    h = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK_N)
    rows = offs_m.to(tl.int64)
    z_ptrs = _row_ptrs(Z, rows, h, stride_zt, stride_zh, offs_d)
    dy_ptrs = _row_ptrs(DY, rows, h, stride_dyt, stride_dyh, offs_d)
    z = _load_tile(z_ptrs, offs_m[:, None] < T, EVEN_M)
    dy = _load_tile(dy_ptrs, offs_m[:, None] < T, EVEN_M)

    wg_ptrs = _up_ptrs(WG, h, offs_d, offs_n, D, I)  # [D, BLOCK_N]
    wu_ptrs = _up_ptrs(WU, h, offs_d, offs_n, D, I)
    wdt_ptrs = _down_t_ptrs(WD, h, offs_d, offs_n, D, I)  # Wd^T chunk [D, BLOCK_N]
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    for n0 in range(0, I, BLOCK_N):
        nmask = (n0 + offs_n) < I  # unused (and not computed) when EVEN_N
        wg = _load_tile(wg_ptrs, nmask[None, :], EVEN_N)
        wu = _load_tile(wu_ptrs, nmask[None, :], EVEN_N)
        wdt = _load_tile(wdt_ptrs, nmask[None, :], EVEN_N)
        g = tl.dot(z, wg)
        u = tl.dot(z, wu)
        da = tl.dot(dy, wdt)  # d(silu(g) * u)
        du, dg = _swiglu_grads(g, u, da, tl.sigmoid(g), tl.float32)
        acc = tl.dot(dg.to(wg.dtype), tl.trans(wg), acc)
        acc = tl.dot(du.to(wu.dtype), tl.trans(wu), acc)
        wg_ptrs += BLOCK_N
        wu_ptrs += BLOCK_N
        wdt_ptrs += BLOCK_N * D

    dz_ptrs = _row_ptrs(DZ, rows, h, stride_dzt, stride_dzh, offs_d)
    _store_tile(dz_ptrs, acc.to(DZ.dtype.element_ty), offs_m[:, None] < T, EVEN_M)


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _bwd_dw_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # pointers
    Z,
    DY,
    WG,
    WU,
    WD,
    DWP,  # SPLIT: fp32 partials [S, 3, H, D, I] (dWg, dWu, dWd^T); else unused
    DWG,  # not SPLIT: dWg [H, D, I] in the weights' dtype
    DWU,  # not SPLIT: dWu [H, D, I]
    DWD,  # not SPLIT: dWd [H, I, D]
    DZ32,  # fp32 dz accumulator [T, H, D] (only with ATOMIC_DZ)
    # sizes
    T,
    I,
    H,
    blocks_per_split,
    # strides
    stride_zt,
    stride_zh,
    stride_dyt,
    stride_dyh,
    # meta-parameters
    D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    EVEN_M: tl.constexpr,
    EVEN_N: tl.constexpr,
    SPLIT: tl.constexpr,
    ATOMIC_DZ: tl.constexpr,
):
    """Weight gradients of one I chunk of one head over one token split (column-stationary)."""
    pid_n = tl.program_id(0)
    h = tl.program_id(1).to(tl.int64)
    s = tl.program_id(2)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    nmask = offs_n < I
    wg_ptrs = _up_ptrs(WG, h, offs_d, offs_n, D, I)
    wu_ptrs = _up_ptrs(WU, h, offs_d, offs_n, D, I)
    wdt_ptrs = _down_t_ptrs(WD, h, offs_d, offs_n, D, I)
    wg = _load_tile(wg_ptrs, nmask[None, :], EVEN_N)  # the chunk stays on chip for the whole walk over T
    wu = _load_tile(wu_ptrs, nmask[None, :], EVEN_N)
    wdt = _load_tile(wdt_ptrs, nmask[None, :], EVEN_N)

    acc_g = tl.zeros([D, BLOCK_N], dtype=tl.float32)
    acc_u = tl.zeros([D, BLOCK_N], dtype=tl.float32)
    acc_d = tl.zeros([D, BLOCK_N], dtype=tl.float32)  # dWd^T
    m_begin = s * blocks_per_split
    m_end = tl.minimum(m_begin + blocks_per_split, tl.cdiv(T, BLOCK_M))
    for mb in range(m_begin, m_end):
        offs_m = mb * BLOCK_M + tl.arange(0, BLOCK_M)
        rows = offs_m.to(tl.int64)
        mmask = offs_m[:, None] < T  # zero rows give g = u = da = 0: no contribution
        z = _load_tile(_row_ptrs(Z, rows, h, stride_zt, stride_zh, offs_d), mmask, EVEN_M)
        dy = _load_tile(_row_ptrs(DY, rows, h, stride_dyt, stride_dyh, offs_d), mmask, EVEN_M)
        g = tl.dot(z, wg)
        u = tl.dot(z, wu)
        da = tl.dot(dy, wdt)
        sig = tl.sigmoid(g)
        a = (g * sig * u).to(z.dtype)
        du, dg = _swiglu_grads(g, u, da, sig, z.dtype)  # rounded: the A operands of the dW GEMMs
        acc_d = tl.dot(tl.trans(dy), a, acc_d)
        acc_g = tl.dot(tl.trans(z), dg, acc_g)
        acc_u = tl.dot(tl.trans(z), du, acc_u)
        if ATOMIC_DZ:
            dzp = tl.dot(dg, tl.trans(wg))
            dzp = tl.dot(du, tl.trans(wu), dzp)
            dz_ptrs = DZ32 + (rows[:, None] * H + h) * D + offs_d[None, :]
            tl.atomic_add(dz_ptrs, dzp, mask=mmask, sem="relaxed")

    if SPLIT:
        base = DWP + (s * 3 * H + h) * D * I + offs_d[:, None] * I + offs_n[None, :]
        tl.store(base, acc_g, mask=nmask[None, :])
        tl.store(base + H * D * I, acc_u, mask=nmask[None, :])
        tl.store(base + 2 * H * D * I, acc_d, mask=nmask[None, :])
    else:  # the only split: the final gradients, cast and (dWd) transposed here
        w_off = h * D * I + offs_d[:, None] * I + offs_n[None, :]  # computed once for dWg and dWu
        tl.store(DWG + w_off, acc_g.to(DWG.dtype.element_ty), mask=nmask[None, :])
        tl.store(DWU + w_off, acc_u.to(DWU.dtype.element_ty), mask=nmask[None, :])
        wd_off = h * I * D + offs_n[None, :] * D + offs_d[:, None]
        tl.store(DWD + wd_off, acc_d.to(DWD.dtype.element_ty), mask=nmask[None, :])


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _dw_finish_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    DWP,  # fp32 partials [S, 3, H, D, I]
    DWG,  # [H, D, I]
    DWU,  # [H, D, I]
    DWD,  # [H, I, D]
    S,
    H,
    I,
    D: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """Sum the token splits' fp32 partials, cast, and write dWg, dWu and dWd (transposed back)."""
    pid = tl.program_id(0)
    h = tl.program_id(1)
    idx = pid * BLOCK + tl.arange(0, BLOCK)  # flat index into one head's [D, I]
    mask = idx < D * I
    acc_g = tl.zeros([BLOCK], dtype=tl.float32)
    acc_u = tl.zeros([BLOCK], dtype=tl.float32)
    acc_d = tl.zeros([BLOCK], dtype=tl.float32)
    for s in range(S):
        base = DWP + (s * 3 * H + h) * D * I + idx
        acc_g += tl.load(base, mask=mask, other=0.0)
        acc_u += tl.load(base + H * D * I, mask=mask, other=0.0)
        acc_d += tl.load(base + 2 * H * D * I, mask=mask, other=0.0)
    tl.store(DWG + h * D * I + idx, acc_g.to(DWG.dtype.element_ty), mask=mask)
    tl.store(DWU + h * D * I + idx, acc_u.to(DWU.dtype.element_ty), mask=mask)
    tl.store(DWD + h * I * D + (idx % I) * D + idx // I, acc_d.to(DWD.dtype.element_ty), mask=mask)


# --------------------------------------------------------------------------- launchers


def _check(
    z: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    dtypes: tuple[torch.dtype, ...] = DTYPES,
) -> tuple[int, ...]:
    for name, t in (("z", z), ("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        if not isinstance(t, torch.Tensor):
            raise InputError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if z.dim() != 3:
        raise InputError(f"z must have shape [tokens, heads, head_dim], got {list(z.shape)}")
    T, H, d = z.shape
    if d not in HEAD_DIMS:
        raise InputError(f"z's head_dim must be one of {list(HEAD_DIMS)}, got {d} (z has shape {list(z.shape)})")
    if H < 1:
        raise InputError(f"z must have at least one head, got shape {list(z.shape)}")
    if z.dtype not in dtypes:
        raise InputError(f"z must be one of {[str(t) for t in dtypes]}, got {z.dtype}")
    if w_gate.dim() != 3 or w_gate.shape[0] != H or w_gate.shape[1] != d:
        raise InputError(f"w_gate must have shape [{H}, {d}, intermediate], got {list(w_gate.shape)}")
    I = w_gate.shape[2]
    if I < 1:
        raise InputError(f"the intermediate size must be >= 1, got w_gate shape {list(w_gate.shape)}")
    if tuple(w_up.shape) != (H, d, I):
        raise InputError(f"w_up must have shape [{H}, {d}, {I}] like w_gate, got {list(w_up.shape)}")
    if tuple(w_down.shape) != (H, I, d):
        raise InputError(f"w_down must have shape [{H}, {I}, {d}], got {list(w_down.shape)}")
    for name, t in (("w_gate", w_gate), ("w_up", w_up), ("w_down", w_down)):
        if t.dtype != z.dtype:
            raise InputError(f"{name} must have z's dtype {z.dtype}, got {t.dtype}")
        if t.device != z.device:
            raise InputError(f"{name} must be on z's device {z.device}, got {t.device}")
    return T, H, d, I


def _rowmajor(t: torch.Tensor) -> torch.Tensor:
    """[T, H, d] with a contiguous last dimension (token and head strides may be anything)."""
    return t if t.stride(-1) == 1 else t.contiguous()


def _contig(t: torch.Tensor) -> torch.Tensor:
    return t if t.is_contiguous() else t.contiguous()


class _FwdPlan:
    __slots__ = ("contig_w", "ints", "launcher", "row_z", "shape")
    contig_w: tuple[bool, bool, bool]  # which weights are copied contiguous first
    ints: tuple[int, ...]
    launcher: Launcher
    row_z: bool  # z is read through a copy with unit-stride rows
    shape: tuple[int, int, int]


# Forward launch plans by call signature (z and the three weights; the config).
_FWD_PLANS = PlanCache()


def _fwd_plan(z: Any, wg: Any, wu: Any, wd: Any, cfg: Config | None) -> _FwdPlan:
    T, H, d = z.shape
    I = wg.shape[2]
    plan = _FwdPlan()
    plan.shape = (T, H, d)
    plan.row_z = z.stride(-1) != 1
    plan.contig_w = (not wg.is_contiguous(), not wu.is_contiguous(), not wd.is_contiguous())
    z = _rowmajor(z)
    cfg = cfg or _tiles(_FWD, d, z.dtype)
    plan.launcher = Launcher(
        _fwd_kernel, (cdiv(T, cfg.block_m), H),
        dict(D=d, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, EVEN_M=T % cfg.block_m == 0, EVEN_N=I % cfg.block_n == 0),
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    plan.ints = (T, I, z.stride(0), z.stride(1), H * d, d)  # y is allocated contiguous
    return plan


def _fwd(z: Any, wg: Any, wu: Any, wd: Any, cfg: Config | None = None, check: bool = True) -> torch.Tensor:
    """Launch the forward. The checks run once per call signature (`check=False`: the caller did them)."""
    key: tuple[Any, ...] | None
    plan: _FwdPlan | None
    try:
        key = (signature(z), signature(wg), signature(wu), signature(wd), cfg)
        plan = _FWD_PLANS.get(key)
    except (AttributeError, TypeError):  # not tensors: the checks refuse them
        key, plan = None, None
    if plan is None:
        if check or key is None:
            _check(z, wg, wu, wd)
        plan = _fwd_plan(z, wg, wu, wd, cfg)
        if key is not None:
            _FWD_PLANS.put(key, plan)
    if plan.row_z:
        z = _rowmajor(z)
    cg, cu, cd = plan.contig_w
    wg = wg.contiguous() if cg else wg
    wu = wu.contiguous() if cu else wu
    wd = wd.contiguous() if cd else wd
    y = _empty(plan.shape, z.device, z.dtype)
    if plan.shape[0]:
        plan.launcher(z, wg, wu, wd, y, *plan.ints)
    return y


def _bwd(
    z: torch.Tensor,
    wg: torch.Tensor,
    wu: torch.Tensor,
    wd: torch.Tensor,
    dy: torch.Tensor,
    mode: str | None = None,
    dz_cfg: Config | None = None,
    dw_cfg: Config | None = None,
    need_dz: bool = True,
    check: bool = True,
    need_dw: bool = True,
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """(dz, dWg, dWu, dWd); dz is None when `need_dz` is False (z needs no gradient), the three weight
    gradients are None when `need_dw` is False (frozen weights: only the dz kernel runs).

    Every torch call here costs CPU time that small problems feel (a training step at T = 4096 was
    CPU-bound on the H200 host in round 1), so the launcher allocates the outputs and launches:
    two kernels, three when the dW kernel splits the tokens.
    """
    T, H, d = z.shape
    I = wg.shape[2]
    if check:
        _check(z, wg, wu, wd)
        mode = mode or MODE
        if mode not in MODES:
            raise InputError(f"mode must be one of {list(MODES)}, got {mode!r}")
    if tuple(dy.shape) != (T, H, d):
        raise InputError(f"dy must have z's shape {[T, H, d]}, got {list(dy.shape)}")
    mode = mode or MODE
    z = _rowmajor(z)
    dy = _rowmajor(dy if dy.dtype == z.dtype else dy.to(z.dtype))
    wg, wu, wd = _contig(wg), _contig(wu), _contig(wd)
    dev = z.device
    if not need_dw:
        if not need_dz:
            return None, None, None, None
        mode = "split"
    dz_cfg = dz_cfg or _tiles(_BWD_DZ, d, z.dtype)
    dw_cfg = dw_cfg or _tiles(_BWD_DW_ATOMIC if mode == "atomic" and need_dz else _BWD_DW, d, z.dtype)
    dwg, dwu = _empty((H, d, I), dev, z.dtype), _empty((H, d, I), dev, z.dtype)
    dwd = _empty((H, I, d), dev, z.dtype)
    if T == 0:
        return (torch.zeros_like(z) if need_dz else None), dwg.zero_(), dwu.zero_(), dwd.zero_()

    blocks = cdiv(T, dw_cfg.block_m)
    splits = dw_splits(T, H, I, dw_cfg, sm_count(dev))
    per_split = cdiv(blocks, splits)
    splits = cdiv(blocks, per_split)
    split = splits > 1
    dwp = _empty((splits, 3, H, d, I), dev, torch.float32) if split else dwg
    atomic = mode == "atomic" and need_dz
    dz32 = torch.zeros((T, H, d), device=dev, dtype=torch.float32) if atomic else dwg
    grid = (cdiv(I, dw_cfg.block_n), H, splits)
    if need_dw:
        _bwd_dw_kernel[grid](
            z, dy, wg, wu, wd, dwp, dwg, dwu, dwd, dz32, T, I, H, per_split,
            z.stride(0), z.stride(1), dy.stride(0), dy.stride(1),
            D=d, EVEN_M=T % dw_cfg.block_m == 0, EVEN_N=I % dw_cfg.block_n == 0, SPLIT=split, ATOMIC_DZ=atomic,
            **dw_cfg.kwargs(),
        )  # fmt: skip
        if split:
            _dw_finish_kernel[(cdiv(d * I, 1024), H)](dwp, dwg, dwu, dwd, splits, H, I, D=d, BLOCK=1024, num_warps=4)
    else:
        dwg = dwu = dwd = None
    if atomic:
        dz = dz32.to(z.dtype)
    elif not need_dz:
        dz = None
    else:
        dz = _empty((T, H, d), dev, z.dtype)
        dz_grid = (cdiv(T, dz_cfg.block_m), H)
        _bwd_dz_kernel[dz_grid](
            z, dy, wg, wu, wd, dz, T, I,
            z.stride(0), z.stride(1), dy.stride(0), dy.stride(1), dz.stride(0), dz.stride(1),
            D=d, EVEN_M=T % dz_cfg.block_m == 0, EVEN_N=I % dz_cfg.block_n == 0, **dz_cfg.kwargs(),
        )  # fmt: skip
    return dz, dwg, dwu, dwd


# --------------------------------------------------------------------------- public ops


class FlashFFNFunction(torch.autograd.Function):  # type: ignore[misc]  # torch is read as Any (unchecked)
    """Autograd wrapper: saves only z and the weights; the backward recomputes the intermediate."""

    @staticmethod
    def forward(ctx: Any, z: Any, w_gate: Any, w_up: Any, w_down: Any) -> Any:
        y = _fwd(z, w_gate, w_up, w_down)  # checks once per call signature
        ctx.save_for_backward(z, w_gate, w_up, w_down)
        return y

    @staticmethod
    def backward(ctx: Any, dy: Any) -> Any:
        z, wg, wu, wd = ctx.saved_tensors
        need = ctx.needs_input_grad
        return _bwd(z, wg, wu, wd, dy, need_dz=need[0], need_dw=any(need[1:]), check=False)


def flash_ffn(z: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """Per-head SwiGLU FFN, fused: y[t, h] = (silu(z[t, h] Wg[h]) * (z[t, h] Wu[h])) Wd[h].

    z [T, H, d_h]; w_gate, w_up [H, d_h, I]; w_down [H, I, d_h]; all bf16, fp16 or fp32 on one
    device. Returns y [T, H, d_h] in z's dtype; differentiable in all four inputs.
    """
    return FlashFFNFunction.apply(z, w_gate, w_up, w_down)


def mhffn_unfused(z: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """The unfused multi-head layer in torch (bmm per head + elementwise): the peer and the spec.

    Writes the [H, T, I] gate and up activations (and their product) to memory.
    """
    _check(z, w_gate, w_up, w_down, dtypes=(*DTYPES, torch.float64))
    zh = z.transpose(0, 1)  # [H, T, d_h]
    a = torch.nn.functional.silu(torch.bmm(zh, w_gate)) * torch.bmm(zh, w_up)  # [H, T, I]
    return torch.bmm(a, w_down).transpose(0, 1)  # [T, H, d_h]


__all__ = ["Config", "FlashFFNFunction", "bwd_configs", "flash_ffn", "fwd_config", "mhffn_unfused"]

check_flash_ffn = _check  # public: tilewise.kernels.custom_ops runs it in the fake impls
