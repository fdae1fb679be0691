"""Sum: the textbook shared-memory block reduction, done properly for a GPU.

The textbook CUDA `block_sum` gives each 256-thread block 256 numbers, adds them pairwise in shared
memory and writes one partial sum per block (blocks meet only through global memory, so the
total takes either a second pass or an atomic). On an H200 that kernel moves one 4-byte element per thread and launches a block per
256 elements. Here:

* each program owns many elements: it strides over the input in BLOCK-element chunks (wide,
  16-byte loads, BLOCK / (32 x num_warps) elements per thread per step) and keeps a vector of
  fp32 accumulators in registers (fp32 for 16-bit inputs; fp64 for fp64);
* the grid is a fixed number of programs per SM (enough bytes in flight to cover HBM latency),
  not one block per 256 elements;
* the in-block tree and the warp shuffles of `block_sum` are `tl.sum`;
* the second pass happens inside the same kernel: every program writes its partial, bumps a
  counter, and the last one to arrive sums the partials in program order (deterministic) and
  writes the result - one launch, no atomics on the data, no memset. The partials and counters
  live in a per-stream workspace (`kernels.utils.workspace`): no allocation but the output's.

`sum(x, dim)` over one dimension views x as [outer, R, inner] (any strides) and reduces R, in one
launch too: when R is split across programs, the last split of each column block adds the partials.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import triton
import triton.language as tl

from tilewise.errors import InputError
from tilewise.kernels.utils import Launcher, PlanCache, contiguous_strides, interpreting, sm_count, workspace
from tilewise.util import cdiv, next_power_of_2

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


# --------------------------------------------------------------------------- config choice


@dataclasses.dataclass(frozen=True)
class SumConfig:
    block: int = 4096  # elements per program per step
    programs_per_sm: int = 4
    num_warps: int = 8


def choose_config(numel: int, element_size: int, sms: int) -> SumConfig:
    """Flat sum: 16-byte loads, 16 elements (fp32) per thread per step, 4 programs per SM.

    Programs per SM x bytes per step per program is what is in flight per SM; the H200 needs
    about 4.3 TB/s x ~1 us / 132 SMs ~ 32 KB in flight per SM: 4 programs x 16 KB covers it.
    """
    return SumConfig(block=4096 * 4 // element_size, programs_per_sm=4, num_warps=8)


# --------------------------------------------------------------------------- kernels


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _sum_flat_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    x_ptr, out_ptr, partial_ptr, counter_ptr,
    numel,
    BLOCK: tl.constexpr, NUM_PROGRAMS: tl.constexpr, PARTIALS: tl.constexpr, ACC: tl.constexpr, BIG: tl.constexpr,
):  # fmt: skip
    """Program p sums chunks p, p + NUM_PROGRAMS, ...; the last program to finish adds the partials."""
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=ACC)
    n_full = numel // BLOCK
    offs = tl.arange(0, BLOCK)
    for blk in range(pid, n_full, NUM_PROGRAMS):
        if BIG:
            start = blk.to(tl.int64) * BLOCK  # type: ignore[attr-defined]  # Triton's range yields tensors
        else:
            start = blk * BLOCK
        acc += tl.load(x_ptr + start + offs).to(ACC)
    if pid == NUM_PROGRAMS - 1:  # the ragged tail (< BLOCK elements)
        if BIG:
            tail = n_full.to(tl.int64) * BLOCK + offs
        else:
            tail = n_full * BLOCK + offs
        acc += tl.load(x_ptr + tail, mask=tail < numel, other=0.0).to(ACC)
    tl.store(partial_ptr + pid, tl.sum(acc, axis=0))
    tl.debug_barrier()
    arrived = tl.atomic_add(counter_ptr, 1, sem="acq_rel", scope="gpu")
    if arrived == NUM_PROGRAMS - 1:
        p_offs = tl.arange(0, PARTIALS)
        parts = tl.load(partial_ptr + p_offs, mask=p_offs < NUM_PROGRAMS, other=0.0, cache_modifier=".cg")
        tl.store(out_ptr, tl.sum(parts, axis=0).to(out_ptr.dtype.element_ty))
        tl.atomic_xchg(counter_ptr, 0)


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _sum_dim_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    x_ptr, out_ptr, part_ptr, counter_ptr,
    R, R_PER_SPLIT, INNER, stride_o, stride_r, stride_i, stride_out_o, stride_out_i,
    BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, ACC: tl.constexpr,
):  # fmt: skip
    """x viewed as [outer, R, inner]: program (o, i-block, s) sums BLOCK_I columns over the s-th
    R_PER_SPLIT rows. One split writes out[o, i] itself; with several, each writes its partial, bumps
    the (o, i-block) counter, and the last to arrive adds the SPLITS partials in split order
    (deterministic), writes out and sets the counter back to zero: one launch either way."""
    o = tl.program_id(0).to(tl.int64)
    pid_i = tl.program_id(1)
    sp = tl.program_id(2)
    offs_b = tl.arange(0, BLOCK_I)
    offs_i = pid_i * BLOCK_I + offs_b
    offs_r = tl.arange(0, BLOCK_R)
    base = x_ptr + o * stride_o + offs_i[None, :].to(tl.int64) * stride_i
    r_lo = sp * R_PER_SPLIT
    r_hi = tl.minimum(r_lo + R_PER_SPLIT, R)
    acc = tl.zeros((BLOCK_R, BLOCK_I), dtype=ACC)
    for r in range(r_lo, r_hi, BLOCK_R):
        rr = r + offs_r
        mask = (rr[:, None] < r_hi) & (offs_i[None, :] < INNER)
        acc += tl.load(base + rr[:, None].to(tl.int64) * stride_r, mask=mask, other=0.0).to(ACC)
    total = tl.sum(acc, axis=0)
    dst = out_ptr + o * stride_out_o + offs_i * stride_out_i
    if SPLITS == 1:
        tl.store(dst, total.to(out_ptr.dtype.element_ty), mask=offs_i < INNER)
    else:
        # partials [outer * i-blocks, SPLITS, BLOCK_I]: one (o, i-block)'s splits are contiguous
        slot = o * tl.num_programs(1) + pid_i
        rows = part_ptr + slot * (SPLITS * BLOCK_I)
        tl.store(rows + sp * BLOCK_I + offs_b, total)
        tl.debug_barrier()
        arrived = tl.atomic_add(counter_ptr + slot, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLITS - 1:
            offs_s = tl.arange(0, BLOCK_S)
            parts = tl.zeros((BLOCK_S, BLOCK_I), dtype=ACC)
            for s0 in range(0, SPLITS, BLOCK_S):
                ss = s0 + offs_s
                ptrs = rows + ss[:, None] * BLOCK_I + offs_b[None, :]
                parts += tl.load(ptrs, mask=ss[:, None] < SPLITS, other=0.0, cache_modifier=".cg")
            tl.store(dst, tl.sum(parts, axis=0).to(out_ptr.dtype.element_ty), mask=offs_i < INNER)
            tl.atomic_xchg(counter_ptr + slot, 0)


# --------------------------------------------------------------------------- launcher


def _acc(dtype: torch.dtype) -> Any:
    return tl.float64 if dtype == torch.float64 else tl.float32


def _check(x: Any, dim: Any) -> Any:
    if not isinstance(x, torch.Tensor):
        raise InputError(f"sum: x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in _FLOATS:
        raise InputError(f"sum: x must be float16, bfloat16, float32 or float64, got {x.dtype}")
    if x.numel() == 0:
        raise InputError(f"sum: x must not be empty, got shape {list(x.shape)}")
    if x.device.type != "cuda" and not interpreting():
        raise InputError(f"sum: x must be on a CUDA device (or set TRITON_INTERPRET=1), got {x.device}")
    if dim is not None:
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise InputError(f"sum: dim must be an int or None, got {dim!r}")
        nd = max(x.dim(), 1)
        if not -nd <= dim < nd:
            raise InputError(f"sum: dim must be in [{-nd}, {nd - 1}] for a {x.dim()}-D tensor, got {dim}")


class _Plan:
    """The one launch of a call signature: its launcher, the integer arguments, the output's shape, and the
    workspace (counters, partials) it needs from `tilewise.kernels.utils.workspace` (0: none)."""

    __slots__ = ("acc_dtype", "copy", "counters", "ints", "launcher", "out_shape", "out_strides", "partials", "reshape")
    acc_dtype: torch.dtype
    copy: bool  # sum a contiguous copy (a strided full sum)
    counters: int
    ints: tuple[int, ...]  # the kernel's integer arguments
    launcher: Launcher
    out_shape: tuple[int, ...]
    out_strides: tuple[int, ...]
    partials: int
    reshape: tuple[int, ...] | None  # the [outer, r, inner] view of x, where the sum needs one


def _plan_all(x: torch.Tensor, cfg: SumConfig | None) -> _Plan:
    plan = _Plan()
    plan.copy = not x.is_contiguous()  # a strided full sum reads through a copy (documented)
    plan.reshape = None
    numel = x.numel()
    sms = sm_count(x.device)
    cfg = cfg or choose_config(numel, x.element_size(), sms)
    programs = max(1, min(sms * cfg.programs_per_sm, cdiv(numel, cfg.block)))
    plan.out_shape, plan.out_strides = (), ()
    plan.acc_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    plan.counters, plan.partials = 1, programs
    plan.launcher = Launcher(
        _sum_flat_kernel, (programs,),
        dict(
            BLOCK=cfg.block, NUM_PROGRAMS=programs, PARTIALS=next_power_of_2(programs),
            ACC=_acc(x.dtype), BIG=numel + cfg.block * programs >= 2**31 - 1,
        ),
        num_warps=cfg.num_warps,
    )  # fmt: skip
    plan.ints = (numel,)
    return plan


def _plan_3d(
    plan: _Plan, n_outer: int, r: int, n_inner: int, x_strides: Any, out_strides: Any, sms: Any, dtype: Any
) -> None:
    """The launch that sums x [n_outer, r, n_inner] (given strides) over r into out [n_outer, n_inner].

    Too few (outer, column-block) programs to keep the SMs streaming - summing the 32768 rows
    of a [32768, 8192] matrix gives 64 column blocks; the last dim of [64, 2^20] gives 2 - split R:
    each split writes an fp32 partial and the last split of each column block adds them (the
    second pass, inside the same launch: a second launch cost the host ~10 us per call on the H200).
    """
    so, sr, si = x_strides
    contiguous_r = sr == 1
    # 4096 elements per program per step either way: 128 x 32 along a contiguous R, 32 x 128
    # across columns otherwise (rows of 128 contiguous columns: 512-byte runs for fp32).
    block_r = 128 if contiguous_r else 32
    block_i = 32 if contiguous_r else 128
    block_i = min(block_i, next_power_of_2(n_inner))
    block_r = min(block_r, max(16, next_power_of_2(r)))
    i_blocks = cdiv(n_inner, block_i)
    programs = n_outer * i_blocks
    # Summing the 32768 rows of a [32768, 8192] fp32 matrix column-wise gave 64 column blocks;
    # split over 4 x SMs programs that read 3.57 TB/s against torch's 4.2 (round 2): aim for 8 x SMs.
    splits = max(1, min(cdiv(8 * sms, programs), r // (8 * block_r)))
    r_per = cdiv(cdiv(r, splits), block_r) * block_r
    splits = cdiv(r, r_per)  # no empty splits
    block_s = min(next_power_of_2(splits), max(1, 4096 // block_i))
    consts = dict(BLOCK_R=block_r, BLOCK_I=block_i, SPLITS=splits, BLOCK_S=block_s, ACC=_acc(dtype))
    plan.launcher = Launcher(_sum_dim_kernel, (n_outer, i_blocks, splits), consts, num_warps=4)
    plan.ints = (r, r_per, n_inner, so, sr, si, out_strides[0], out_strides[1])
    plan.counters = programs if splits > 1 else 0
    plan.partials = programs * splits * block_i if splits > 1 else 0


def _plan_dim(x: torch.Tensor, dim: int, keepdim: bool) -> _Plan:
    plan = _Plan()
    plan.copy = False
    nd = x.dim()
    dim = dim % nd
    shape = list(x.shape)
    r = shape[dim]
    outer_shape, inner_shape = shape[:dim], shape[dim + 1 :]
    plan.out_shape = (*outer_shape, 1, *inner_shape) if keepdim else (*outer_shape, *inner_shape)
    plan.out_strides = contiguous_strides(plan.out_shape)
    plan.acc_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    outer = 1
    for s in outer_shape:
        outer *= s
    inner = 1
    for s in inner_shape:
        inner *= s
    # [outer, R, inner] view: reshape keeps strides where it can (else every call copies)
    x3 = x.reshape(outer, r, inner)
    plan.reshape = None if x3.data_ptr() == x.data_ptr() else (outer, r, inner)
    o_stride = inner  # out is allocated contiguous: [outer, inner] row-major whatever keepdim says
    if inner == 1:
        # Reducing the last dimension: the outer rows become the columns of the tile so that
        # one program sums BLOCK_I rows at once (loads run along R, the contiguous axis).
        so, sr, si, soo, soi, n_outer, n_inner = 0, x3.stride(1), x3.stride(0), 0, o_stride, 1, outer
    else:
        so, sr, si, soo, soi, n_outer, n_inner = x3.stride(0), x3.stride(1), x3.stride(2), o_stride, 1, outer, inner
    _plan_3d(plan, n_outer, r, n_inner, (so, sr, si), (soo, soi), sm_count(x.device), x.dtype)
    return plan


def _run(plan: _Plan, x: torch.Tensor) -> torch.Tensor:
    if plan.copy:
        x = x.contiguous()
    elif plan.reshape is not None:
        x = x.reshape(plan.reshape)
    out = torch.empty_strided(plan.out_shape, plan.out_strides, dtype=x.dtype, device=x.device)
    if plan.counters:
        cnt, part = workspace(x.device, plan.counters, plan.partials, plan.acc_dtype, "sum")
        plan.launcher(x, out, part, cnt, *plan.ints)
    else:
        plan.launcher(x, out, out, out, *plan.ints)
    return out


# Launch plans by call signature (shape, strides, dtype, device, alignment, dim, keepdim, config).
_PLANS = PlanCache()


def sum(x: torch.Tensor, dim: int | None = None, *, keepdim: bool = False, config: SumConfig | None = None) -> Any:
    """Sum of x over all elements (dim=None) or over one dimension.

    Args:
        x: a float16 / bfloat16 / float32 / float64 tensor of any shape and strides.
        dim: None (every element) or one dimension (negative counts from the end).
        keepdim: keep the reduced dimension with size 1 (dim given only).
        config: pin a `SumConfig` for the full sum (sweeps, tests).

    Returns:
        A tensor of x's dtype: 0-D for dim=None, else x's shape without `dim`. 16-bit
        inputs are accumulated in fp32, fp32 in fp32, fp64 in fp64.
    """
    key: tuple[Any, ...] | None
    try:
        key = (x.shape, x.stride(), x.dtype, x.device, x.data_ptr() % 16 == 0, dim, type(dim), keepdim, config)
        plan = _PLANS.get(key)
    except (AttributeError, TypeError):  # not a tensor, or an unhashable dim: the checks refuse it
        key, plan = None, None
    if plan is None:
        _check(x, dim)
        if dim is None or x.dim() == 0:
            plan = _plan_all(x, config)
        else:
            plan = _plan_dim(x, dim, keepdim)
        if key is not None:
            _PLANS.put(key, plan)
    return _run(plan, x)


__all__ = ["SumConfig", "choose_config", "sum"]

check_sum = _check  # public: tilewise.kernels.custom_ops runs it in the fake impls
