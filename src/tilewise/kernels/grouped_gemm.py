"""Persistent grouped GEMM: y[rows of expert e] = x[rows of expert e] @ w[e], one launch for all experts.

With many experts each gets few tokens, the matrices are small, the main
loop along K is short, and the prologue (filling the load pipeline) and epilogue (writing the
tile back) of every tile show. The answer is a *persistent* kernel: one program per SM, each
looping over output tiles it pulls from a scheduler. The experts share K and N but each has its
own M; the scheduler takes a prefix sum over the per-expert tile counts and finds the expert a
global tile index falls into by a binary search.

The tile order is exactly the one of `tilewise.model.waves` (the tests check it with the
kernel's trace output):

* `grouped_schedule`: expert e has ceil(rows_e / BLOCK_M) x ceil(N / BLOCK_N) tiles; the
  exclusive prefix sum of those counts numbers the tiles of all experts one after another;
* `tile_owner`: global tile -> (expert, local tile) by binary search over the prefix sum;
* `local_tile_coords`: local tile -> (m tile, n tile), m fastest, so the programs that take
  consecutive tiles share one [K, BLOCK_N] slice of the expert's weight while it is in L2;
* `persistent_tiles`: program p takes tiles p, p + P, p + 2P, ...

Two ways of finding a tile's expert are built, and measured against each other on the H200
(tests/data/tuning/grouped.md and docs/kernels.md have the numbers): `"search"` (a binary search over the prefix
sum, ceil(log2 E) dependent loads per tile) and `"map"` (a precomputed tile -> (expert, local)
map, one load per tile, built by a small kernel in the same stream).

Small M per expert (8-64 rows) is handled by a small BLOCK_M or by swapping the operands
(`swap_ab`): the kernel then computes y^T = w^T x^T, so the tokens sit in the MMA's N
dimension (wgmma allows N = 8 ... 256) and the weights fill its M = 64.

Nothing here syncs with the host: the schedule is computed on the device, the programs read
the tile count from it, so `grouped_matmul` can run inside a CUDA graph (with
`check_offsets=False`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from tilewise import gpus as _gpus
from tilewise.advise import default_config
from tilewise.errors import InputError
from tilewise.kernels.utils import Launcher, PlanCache, gpu_key, interpreting, long_kernel, signature, sm_count
from tilewise.model.waves import grouped_tile
from tilewise.util import cdiv, next_power_of_2

# ----------------------------------------------------------------------------- helpers

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
SCHEDULES = ("map", "search", "inline")


def _search_steps(experts: int) -> int:
    """Binary-search steps that shrink [0, E] to one expert: ceil(log2 E) (0 for one expert)."""
    return max(0, math.ceil(math.log2(experts))) if experts > 1 else 0


# ------------------------------------------------------------------------ config choice


@dataclass(frozen=True)
class GroupedConfig:
    block_m: int  # rows (tokens) per tile
    block_n: int  # output columns per tile
    block_k: int
    num_warps: int
    num_stages: int
    swap_ab: bool = False  # tokens in the MMA's N dimension (computes y^T = w^T x^T)
    # "search": a small kernel computes the prefix sum, the persistent kernel binary-searches it;
    # "inline": the persistent kernel computes the prefix sum itself (one launch), binary search;
    # "map": a small kernel computes the prefix sum and a tile -> (expert, local tile) map.
    schedule: str = "map"
    flatten: bool = False  # let the pipeliner flatten the tile loop and the K loop into one
    tma: bool = False  # load tiles with TMA descriptors (weights always; x when not gathered)
    programs_per_sm: int = 1  # persistent programs per SM (2: one's epilogue overlaps the other's loads)

    def key(self) -> str:
        s = f"m{self.block_m}n{self.block_n}k{self.block_k}w{self.num_warps}s{self.num_stages}"
        return (
            s
            + ("-swap" if self.swap_ab else "")
            + f"-{self.schedule}"
            + ("-flat" if self.flatten else "")
            + ("-tma" if self.tma else "")
            + (f"-p{self.programs_per_sm}" if self.programs_per_sm != 1 else "")
        )


def choose_config(
    rows_per_expert: float,
    n: int,
    k: int,
    dtype: torch.dtype,
    on_gpu: bool = True,
    glu: bool = False,
    experts: int | None = None,
    gpu: str = _gpus.DEFAULT_GPU,
) -> GroupedConfig:
    """A tile for the average rows per expert.

    With `experts` (16-bit, no glu, on the GPU) it is the advisor's top-1 (tilewise.advise: the space of
    tiles x stages x schedules ranked by the time model; on the H200 sweep's held-out problems within 5%
    of the best on ~70%, the table below on 45%; docs/advise.md). Otherwise the table:

    Under the interpreter the tiles are small so the tests run fast and exercise the edges.
    On the GPU: the tile shape of `tilewise.model.waves.grouped_tile`, with warps, stages, flattening and TMA
    from the H200 sweeps of 2026-11-30 (tests/data/tuning/grouped.md: e.g. 8 rows per expert, 128 experts,
    K 2048, N 1536: m16n128k128 w4 s4 flattened 197.5 us, 1.34x torch._grouped_mm).
    glu (the MoE gate/up GEMM: a gate and an up tile per step): half the block_n, so a stage
    holds as many weight bytes as without it.
    """
    if not on_gpu:
        return GroupedConfig(block_m=16, block_n=32, block_k=32, num_warps=4, num_stages=2, tma=True, flatten=True)
    if experts is not None and not glu and dtype in (torch.float16, torch.bfloat16) and rows_per_expert >= 1:
        adv = _advised(
            int(experts), round(rows_per_expert), int(n), int(k), "bf16" if dtype == torch.bfloat16 else "fp16", gpu
        )
        if adv is not None:
            return adv
    if dtype == torch.float32:
        cfg = GroupedConfig(block_m=64, block_n=64, block_k=32, num_warps=4, num_stages=3, tma=True, flatten=True)
    else:
        # the tile shape is the model's (tilewise.model.waves.grouped_tile), so explain moe predicts these tiles
        bm, bn, bk = grouped_tile(rows_per_expert, n)
        warps = 4 if bm <= 32 else 8
        stages = 4 if bm == 16 else 3
        if bm == 128 and rows_per_expert >= 512 and n >= 4096:
            cfg = GroupedConfig(block_m=bm, block_n=bn, block_k=bk, num_warps=warps, num_stages=4, tma=True)
        else:
            cfg = GroupedConfig(
                block_m=bm, block_n=bn, block_k=bk, num_warps=warps, num_stages=stages, tma=True, flatten=True
            )
    if glu:
        cfg = dataclasses.replace(cfg, block_n=max(16, cfg.block_n // 2))
    return cfg


@functools.lru_cache(maxsize=4096)
def _advised(experts: int, rows: int, n: int, k: int, dtype: str, gpu: str) -> GroupedConfig | None:
    try:
        c = default_config(
            "grouped", {"experts": experts, "rows_per_expert": rows, "n": n, "k": k, "dtype": dtype}, gpu
        )
    except InputError:
        return None
    return GroupedConfig(**c)


# ------------------------------------------------------------------------------ kernels


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _schedule_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    offsets_ptr,  # int32 [E]: cumulative row ends
    prefix_ptr,  # int32 [E + 1]: exclusive prefix sum of tiles per expert (out)
    map_e_ptr,  # int32 [bound]: expert of each global tile (out, WRITE_MAP)
    map_l_ptr,  # int32 [bound]: local tile index within its expert (out, WRITE_MAP)
    E,
    N_TILES,
    BLOCK_M: tl.constexpr,
    BLOCK_E: tl.constexpr,
    MAP_CHUNK: tl.constexpr,
    WRITE_MAP: tl.constexpr,
):
    """grouped_schedule on the device: every program computes the prefix sum; program 0 stores
    it; with WRITE_MAP, program e also fills the tile map for the tiles of expert e."""
    pid = tl.program_id(0)
    idx = tl.arange(0, BLOCK_E)
    ends = tl.load(offsets_ptr + idx, mask=idx < E, other=0)
    starts = tl.load(offsets_ptr + idx - 1, mask=(idx >= 1) & (idx < E), other=0)
    tiles = (ends - starts + BLOCK_M - 1) // BLOCK_M * N_TILES  # grouped_schedule: m_tiles x n_tiles
    incl = tl.cumsum(tiles, axis=0)
    if pid == 0:
        tl.store(prefix_ptr + 1 + idx, incl, mask=idx < E)
        tl.store(prefix_ptr + idx, tl.zeros_like(idx), mask=idx == 0)
    if WRITE_MAP:
        mine = idx == pid
        start = tl.sum(tl.where(mine, incl - tiles, 0), axis=0)
        count = tl.sum(tl.where(mine, tiles, 0), axis=0)
        for c in range(0, count, MAP_CHUNK):
            j = c + tl.arange(0, MAP_CHUNK)
            tl.store(map_e_ptr + start + j, tl.zeros_like(j) + pid, mask=j < count)
            tl.store(map_l_ptr + start + j, j, mask=j < count)


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _grouped_mm_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # pointers
    x_ptr,  # [T_in, K] activations (rows in expert order, or gathered through gather_ptr)
    w_ptr,  # [E, K, N_w] weights
    y_ptr,  # [T_out, N] output
    offsets_ptr,  # int32 [E] cumulative row ends (in the permuted / expert order)
    prefix_ptr,  # int32 [E + 1] tile prefix sum (from _schedule_kernel)
    map_e_ptr,  # int32 tile -> expert (USE_MAP)
    map_l_ptr,  # int32 tile -> local tile (USE_MAP)
    gather_ptr,  # int [rows]: x row of permuted row r is gather[r] // gather_div (GATHER)
    scatter_ptr,  # int [rows]: y row of each permuted row (SCATTER)
    scale_ptr,  # fp32 [rows of y]: factor for each y row, indexed like y (SCALE)
    trace_ptr,  # int32 [bound, 4]: (program, expert, m tile, n tile) of each tile (TRACE)
    x_desc,  # TMA descriptor of x, block [BLOCK_M, BLOCK_K] (TMA_X)
    w_desc,  # TMA descriptor of w, block [1, BLOCK_K, BLOCK_N] (TMA_W)
    # sizes
    gather_div,  # the MoE's top_k: a token slot t * k + j reads x row t
    E,
    N,  # output columns (with GLU: the width of the gate half)
    K,
    # strides
    stride_xt,
    stride_xk,
    stride_we,
    stride_wk,
    stride_wn,
    stride_yt,
    stride_yn,
    # meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    SEARCH_STEPS: tl.constexpr,
    USE_MAP: tl.constexpr,
    SWAP_AB: tl.constexpr,
    FLATTEN: tl.constexpr,
    EVEN_K: tl.constexpr,
    GLU: tl.constexpr,  # y = silu(x @ w[:, :N]) * (x @ w[:, N:2N]), the MoE gate/up epilogue
    GATHER: tl.constexpr,
    SCATTER: tl.constexpr,
    SCALE: tl.constexpr,
    TRACE: tl.constexpr,
    TMA_X: tl.constexpr,  # load x tiles with TMA (not with GATHER: Hopper's TMA has no row gather)
    TMA_W: tl.constexpr,  # load weight tiles with TMA (out-of-bounds parts come back as zeros)
    INLINE_PREFIX: tl.constexpr,  # compute the prefix sum in the kernel (schedule "inline")
    BLOCK_E: tl.constexpr,  # next power of two >= E (INLINE_PREFIX)
):
    pid = tl.program_id(0)
    if INLINE_PREFIX:
        # grouped_schedule inside the kernel (no separate launch): each program computes the
        # prefix sum in registers and stores it in its own row of the scratch [P, E + 1], which
        # the binary search then reads (the barrier makes the stores visible to the whole program).
        idx = tl.arange(0, BLOCK_E)
        ends = tl.load(offsets_ptr + idx, mask=idx < E, other=0)
        starts = tl.load(offsets_ptr + idx - 1, mask=(idx >= 1) & (idx < E), other=0)
        tiles = (ends - starts + BLOCK_M - 1) // BLOCK_M * tl.cdiv(N, BLOCK_N)
        incl = tl.cumsum(tiles, axis=0)
        prefix_ptr = prefix_ptr + pid * (E + 1)
        tl.store(prefix_ptr + 1 + idx, incl, mask=idx < E)
        tl.store(prefix_ptr + idx, tl.zeros_like(idx), mask=idx == 0)
        total = tl.sum(tiles, axis=0)
        tl.debug_barrier()
    else:
        total = tl.load(prefix_ptr + E)  # tiles of all experts (grouped_schedule.total_tiles)
    offs_k0 = tl.arange(0, BLOCK_K)
    # persistent_tiles: program p takes p, p + P, p + 2P, ...
    for tile in tl.range(pid, total, NUM_PROGRAMS, flatten=FLATTEN):
        # ---- scheduler: tile -> (expert, local tile)
        if USE_MAP:
            e = tl.load(map_e_ptr + tile)
            local = tl.load(map_l_ptr + tile)
        else:
            # tile_owner: the last e with prefix[e] <= tile; invariant prefix[lo] <= tile < prefix[hi]
            lo = tile * 0
            hi = lo + E
            for _ in tl.static_range(SEARCH_STEPS):
                mid = (lo + hi) // 2
                go = tl.load(prefix_ptr + mid) <= tile
                lo = tl.where(go, mid, lo)
                hi = tl.where(go, hi, mid)
            e = lo
            local = tile - tl.load(prefix_ptr + e)
        row_end = tl.load(offsets_ptr + e)
        row_start = tl.where(e > 0, tl.load(offsets_ptr + tl.maximum(e - 1, 0)), 0)
        # local_tile_coords: m varies fastest
        m_tiles = tl.cdiv(row_end - row_start, BLOCK_M)
        pid_m = local % m_tiles
        pid_n = local // m_tiles
        if TRACE:
            tl.store(trace_ptr + tile * 4, pid)
            tl.store(trace_ptr + tile * 4 + 1, e)
            tl.store(trace_ptr + tile * 4 + 2, pid_m)
            tl.store(trace_ptr + tile * 4 + 3, pid_n)

        offs_m = row_start + pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        m_mask = offs_m < row_end
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        n_mask = offs_n < N
        if GATHER:
            src = tl.load(gather_ptr + offs_m, mask=m_mask, other=0).to(tl.int64) // gather_div
        else:
            src = offs_m.to(tl.int64)
        a_ptrs = x_ptr + src[:, None] * stride_xt + offs_k0[None, :] * stride_xk
        w_base = w_ptr + e.to(tl.int64) * stride_we
        b_ptrs = w_base + offs_k0[:, None] * stride_wk + offs_n[None, :] * stride_wn
        if GLU:
            u_ptrs = b_ptrs + N * stride_wn
        if SWAP_AB:
            acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
            if GLU:
                acc_u = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
        else:
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            if GLU:
                acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        row0 = row_start + pid_m * BLOCK_M
        n0 = pid_n * BLOCK_N
        for k0 in tl.range(0, K, BLOCK_K, num_stages=NUM_STAGES):
            if not EVEN_K:
                k_mask = (k0 + offs_k0) < K
            # rows of the next expert in a partial tile are read but never stored (x via TMA)
            if TMA_X:
                a = x_desc.load([row0, k0])
            elif EVEN_K:
                a = tl.load(a_ptrs, mask=m_mask[:, None], other=0.0)
            else:
                a = tl.load(a_ptrs, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
            if TMA_W:
                b = w_desc.load([e, k0, n0]).reshape(BLOCK_K, BLOCK_N)
            elif EVEN_K:
                b = tl.load(b_ptrs, mask=n_mask[None, :], other=0.0)
            else:
                b = tl.load(b_ptrs, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
            if SWAP_AB:
                acc = tl.dot(tl.trans(b), tl.trans(a), acc)
            else:
                acc = tl.dot(a, b, acc)
            if GLU:
                if TMA_W:
                    u = w_desc.load([e, k0, N + n0]).reshape(BLOCK_K, BLOCK_N)
                elif EVEN_K:
                    u = tl.load(u_ptrs, mask=n_mask[None, :], other=0.0)
                else:
                    u = tl.load(u_ptrs, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
                if SWAP_AB:
                    acc_u = tl.dot(tl.trans(u), tl.trans(a), acc_u)
                else:
                    acc_u = tl.dot(a, u, acc_u)
                u_ptrs += BLOCK_K * stride_wk
            a_ptrs += BLOCK_K * stride_xk
            b_ptrs += BLOCK_K * stride_wk

        # ---- epilogue: (GLU) silu(gate) * up, (SCALE) routing weight, (SCATTER) back to token slots
        if SWAP_AB:
            acc = tl.trans(acc)
            if GLU:
                acc_u = tl.trans(acc_u)
        if GLU:
            acc = acc * tl.sigmoid(acc) * acc_u
        if SCATTER:
            dst = tl.load(scatter_ptr + offs_m, mask=m_mask, other=0).to(tl.int64)
        else:
            dst = offs_m.to(tl.int64)
        if SCALE:
            s = tl.load(scale_ptr + dst, mask=m_mask, other=0.0)
            acc = acc * s[:, None]
        y_ptrs = y_ptr + dst[:, None] * stride_yt + offs_n[None, :] * stride_yn
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=m_mask[:, None] & n_mask[None, :])


# ----------------------------------------------------------------------- launcher with checks


def _check_inputs(x: Any, w: Any, offsets: Any, *, glu: bool = False) -> None:
    if not isinstance(x, torch.Tensor) or not isinstance(w, torch.Tensor) or not isinstance(offsets, torch.Tensor):
        raise InputError(
            f"x, w and offsets must be torch tensors, got {type(x).__name__}, {type(w).__name__}, "
            f"{type(offsets).__name__}"
        )
    if x.dim() != 2:
        raise InputError(f"x must have shape [tokens, K], got {list(x.shape)}")
    if w.dim() != 3:
        raise InputError(f"w must have shape [experts, K, N], got {list(w.shape)}")
    if w.shape[1] != x.shape[1]:
        raise InputError(
            f"w must have shape [experts, {x.shape[1]}, N] to match x [tokens, {x.shape[1]}], got {list(w.shape)}"
        )
    if x.dtype not in _DTYPES:
        raise InputError(f"x must be float16, bfloat16 or float32, got {x.dtype}")
    if w.dtype != x.dtype:
        raise InputError(f"w must have the dtype of x ({x.dtype}), got {w.dtype}")
    if x.device != w.device or offsets.device != x.device:
        raise InputError(f"x, w and offsets must be on one device, got {x.device}, {w.device}, {offsets.device}")
    if offsets.dim() != 1 or offsets.shape[0] != w.shape[0]:
        raise InputError(
            f"offsets must have shape [{w.shape[0]}] (one cumulative row end per expert of w), "
            f"got {list(offsets.shape)}"
        )
    if offsets.dtype != torch.int32:
        raise InputError(f"offsets must be int32, got {offsets.dtype}")
    if w.shape[0] < 1 or x.shape[1] < 1 or w.shape[2] < 1:
        raise InputError(f"w must have at least one expert, K >= 1 and N >= 1, got {list(w.shape)}")
    if glu and w.shape[2] % 2:
        raise InputError(f"w_gate_up must have an even last dimension (gate | up), got {w.shape[2]}")


def _check_offset_values(offsets: torch.Tensor, tokens: int) -> None:
    """Non-decreasing, >= 0 and ending at most at T (one device-to-host copy, then plain Python)."""
    o = offsets.tolist()
    if o and o[0] < 0:
        raise InputError(f"offsets must be >= 0 (cumulative row ends), got offsets[0] = {o[0]}")
    for i in range(len(o) - 1):
        if o[i + 1] < o[i]:
            raise InputError(
                f"offsets must be non-decreasing (cumulative row ends), got offsets[{i}] = {o[i]} > "
                f"offsets[{i + 1}] = {o[i + 1]}"
            )
    if o and o[-1] > tokens:
        raise InputError(f"offsets must end at most at the number of rows of x ({tokens}), got {o[-1]}")


def _tma_ok(t: torch.Tensor) -> bool:
    """TMA needs a 16-byte aligned base, unit last stride and 16-byte aligned other strides."""
    e = t.element_size()
    return t.stride(-1) == 1 and t.data_ptr() % 16 == 0 and all((s * e) % 16 == 0 for s in t.stride()[:-1])


def _tile_bound(rows: int, experts: int, block_m: int, n_tiles: int) -> int:
    """Most tiles any split of `rows` over `experts` can have: each expert wastes < 1 m tile."""
    return (cdiv(rows, block_m) + min(experts, rows)) * n_tiles


class _Plan:
    __slots__ = (
        "bound",
        "cfg",
        "ints",
        "ints_y",
        "kernel",
        "prefix_shape",
        "schedule",
        "schedule_ints",
        "tma_w",
        "tma_x",
        "trace",
        "use_map",
    )  # fmt: skip
    bound: int  # the tile count's upper bound (the map's length)
    cfg: GroupedConfig
    ints: tuple[Any, ...]  # the GEMM's integer arguments
    ints_y: tuple[Any, ...]  # y's strides
    kernel: Launcher
    prefix_shape: tuple[int, ...]
    schedule: Launcher | None  # the prefix-sum (and map) kernel; None when the GEMM computes it inline
    schedule_ints: tuple[int, int]
    tma_w: bool
    tma_x: bool
    trace: bool
    use_map: bool


def _make_plan(
    x: Any,
    w: Any,
    y: Any,
    n: Any,
    cfg: Any,
    rows: int,
    glu: Any,
    gather: Any,
    scatter: Any,
    scale: Any,
    gather_div: Any,
    trace: Any,
    programs: Any,
) -> _Plan:
    E, K = w.shape[0], w.shape[1]
    if cfg.schedule not in SCHEDULES:
        raise InputError(f"config.schedule must be one of {list(SCHEDULES)}, got {cfg.schedule!r}")
    plan = _Plan()
    n_tiles = cdiv(n, cfg.block_n)
    plan.bound = max(1, _tile_bound(rows, E, cfg.block_m, n_tiles))
    plan.use_map = cfg.schedule == "map"
    inline = cfg.schedule == "inline"
    # not clamped to the tile count: P is a compile-time constant, and programs past the last tile simply
    # find no work (a varying P would recompile the kernel for small problems). The interpreter has no
    # compile to save and runs each program in numpy, so there P stops at the tiles.
    P = max(1, programs or sm_count(x.device) * cfg.programs_per_sm)
    if programs is None and interpreting():
        P = min(P, plan.bound)
    plan.prefix_shape = (P, E + 1) if inline else (E + 1,)  # inline: scratch, one row per program
    block_e = max(16, next_power_of_2(E))
    plan.schedule = None
    if not inline:
        plan.schedule = Launcher(
            _schedule_kernel, (E if plan.use_map else 1,),
            dict(BLOCK_M=cfg.block_m, BLOCK_E=block_e, MAP_CHUNK=256, WRITE_MAP=plan.use_map),
            num_warps=4,
        )  # fmt: skip
        plan.schedule_ints = (E, n_tiles)
    plan.tma_w = cfg.tma and _tma_ok(w)
    plan.tma_x = cfg.tma and gather is None and _tma_ok(x)
    plan.cfg = cfg
    plan.trace = trace
    plan.kernel = Launcher(
        _grouped_mm_kernel, (P,),
        dict(
            BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, NUM_PROGRAMS=P,
            NUM_STAGES=cfg.num_stages, SEARCH_STEPS=_search_steps(E), USE_MAP=plan.use_map, SWAP_AB=cfg.swap_ab,
            FLATTEN=cfg.flatten, EVEN_K=(K % cfg.block_k == 0), GLU=glu, GATHER=gather is not None,
            SCATTER=scatter is not None, SCALE=scale is not None, TRACE=trace, TMA_X=plan.tma_x, TMA_W=plan.tma_w,
            INLINE_PREFIX=inline, BLOCK_E=block_e,
        ),
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    plan.ints = (gather_div, E, n, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1), w.stride(2))
    plan.ints_y = (y.stride(0), y.stride(1))
    return plan


def _run(plan: _Plan, x: Any, w: Any, offsets: Any, y: Any, gather: Any, scatter: Any, scale: Any) -> Any:
    dev = x.device
    prefix = torch.empty(plan.prefix_shape, dtype=torch.int32, device=dev)
    if plan.use_map:
        map_e = torch.empty(plan.bound, dtype=torch.int32, device=dev)
        map_l = torch.empty(plan.bound, dtype=torch.int32, device=dev)
    else:
        map_e = map_l = prefix
    if plan.schedule is not None:
        plan.schedule(offsets, prefix, map_e, map_l, *plan.schedule_ints)
    tr = torch.full((plan.bound, 4), -1, dtype=torch.int32, device=dev) if plan.trace else prefix
    cfg = plan.cfg
    x_desc = TensorDescriptor.from_tensor(x, [cfg.block_m, cfg.block_k]) if plan.tma_x else x
    w_desc = TensorDescriptor.from_tensor(w, [1, cfg.block_k, cfg.block_n]) if plan.tma_w else w
    plan.kernel(
        x, w, y, offsets, prefix, map_e, map_l,
        prefix if gather is None else gather, prefix if scatter is None else scatter,
        prefix if scale is None else scale, tr, x_desc, w_desc, *plan.ints, *plan.ints_y,
    )  # fmt: skip
    return tr if plan.trace else None


# Launch plans by call signature: every tensor's shape, strides, dtype, device and alignment, and the options.
_PLANS = PlanCache()


def launch(
    x: torch.Tensor,
    w: torch.Tensor,
    offsets: torch.Tensor,
    y: torch.Tensor,
    n: int,
    cfg: GroupedConfig,
    *,
    rows: int,
    glu: bool = False,
    gather: torch.Tensor | None = None,
    scatter: torch.Tensor | None = None,
    scale: torch.Tensor | None = None,
    gather_div: int = 1,
    trace: bool = False,
    programs: int | None = None,
) -> torch.Tensor | None:
    """Schedule on the device, then the persistent kernel (inputs already checked: `grouped_matmul`,
    `moe`). y[rows of expert e] = x[rows] @ w[e][:, :n] (with `glu`, silu(gate) * up of w's two halves);
    `gather` / `gather_div` pick x rows, `scatter` y rows, `scale` multiplies y rows. Returns the trace
    [bound, 4] if asked."""
    key = (
        signature(x), signature(w), offsets.dtype, offsets.device, signature(y), n, cfg, rows, glu,
        signature(gather), signature(scatter), signature(scale), gather_div, trace, programs,
    )  # fmt: skip
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS.put(
            key, _make_plan(x, w, y, n, cfg, rows, glu, gather, scatter, scale, gather_div, trace, programs)
        )
    return _run(plan, x, w, offsets, y, gather, scatter, scale)


def launch_plan(
    x: torch.Tensor,
    w: torch.Tensor,
    y: torch.Tensor,
    n: int,
    cfg: GroupedConfig,
    *,
    rows: int,
    glu: bool = False,
    gather: torch.Tensor | None = None,
    scatter: torch.Tensor | None = None,
    scale: torch.Tensor | None = None,
    gather_div: int = 1,
) -> _Plan:
    """The plan `launch` would cache for these tensors, for a caller that caches it under its own key
    (MultiHeadMoE: one key for its two GEMMs instead of one per launch). Run it with `launch_planned`
    on tensors of the same shapes, strides, dtypes and alignment."""
    return _make_plan(x, w, y, n, cfg, rows, glu, gather, scatter, scale, gather_div, False, None)


def launch_planned(
    plan: _Plan,
    x: torch.Tensor,
    w: torch.Tensor,
    offsets: torch.Tensor,
    y: torch.Tensor,
    *,
    gather: torch.Tensor | None = None,
    scatter: torch.Tensor | None = None,
    scale: torch.Tensor | None = None,
) -> None:
    """`launch` without the signature lookup: the plan comes from `launch_plan`."""
    _run(plan, x, w, offsets, y, gather, scatter, scale)


# ------------------------------------------------------------------------------ public op


def _choose_checked(x: Any, w: Any, offsets: Any, out: Any, config: Any) -> GroupedConfig:
    """Check a call signature not seen before and pick its config."""
    _check_inputs(x, w, offsets)
    T, K = x.shape
    E, _, N = w.shape
    if out is not None and (out.shape != (T, N) or out.dtype != x.dtype or out.device != x.device):
        raise InputError(
            f"out must be a {x.dtype} tensor of shape [{T}, {N}] on {x.device}, got {out.dtype} {list(out.shape)}"
        )
    if config is not None:
        chosen: GroupedConfig = config
        return chosen
    cfg = choose_config(T / E, N, K, x.dtype, on_gpu=x.is_cuda, experts=E, gpu=gpu_key(x.device))
    if x.is_cuda and not long_kernel(x.device, 2.0 * T * K * N, (E * K * N + T * (K + N)) * x.element_size(), x.dtype):
        # Too short to hide the host: no TMA descriptors (utils.long_kernel), and the prefix sum inside the
        # GEMM (one launch, one allocation instead of two and three; the CPU-bound MoE layer at T 512 ran
        # 415 us inline vs 421 us with the map, moe_layer.moe_configs).
        cfg = dataclasses.replace(cfg, tma=False, schedule="inline")
    return cfg


# grouped_matmul calls by signature: (rows, output shape, launch plan); the checks run once per signature.
_CALLS = PlanCache()


def grouped_matmul(
    x: torch.Tensor,
    w: torch.Tensor,
    offsets: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    config: GroupedConfig | None = None,
    check_offsets: bool = True,
    programs: int | None = None,
    trace: bool = False,
) -> Any:
    """y = x @ w[e] for the rows of each expert e, in one persistent launch.

    x: [T, K] float16 / bfloat16 / float32, rows sorted by expert.
    w: [E, K, N], the dtype of x.
    offsets: int32 [E], cumulative row ends: expert e owns rows offsets[e-1] .. offsets[e]
        (offsets[-1] = 0); rows past offsets[-1] are not written.
    check_offsets: check that offsets are non-decreasing and <= T (one device-to-host copy;
        pass False inside CUDA graphs and hot loops where offsets are known good).
    config: a GroupedConfig (tile, schedule, swap); default from `choose_config`.
    programs: persistent programs (default: one per SM).
    trace: also return an int32 [tiles, 4] tensor: (program, expert, m tile, n tile) of each
        tile in global tile order (rows past the schedule's total are -1).

    Returns y [T, N] in the dtype of x (and the trace if asked).
    """
    key: tuple[Any, ...] | None
    try:
        key = (signature(x), signature(w), signature(offsets), signature(out), config, programs, trace)
        entry = _CALLS.get(key)
    except (AttributeError, TypeError):  # not tensors, or an unhashable option: the checks refuse it
        key, entry = None, None
    if entry is None:
        cfg = _choose_checked(x, w, offsets, out, config)
        T, N = x.shape[0], w.shape[2]
        y = out if out is not None else torch.empty((T, N), dtype=x.dtype, device=x.device)
        plan = _make_plan(x, w, y, N, cfg, T, False, None, None, None, 1, trace, programs) if T > 0 else None
        entry = (T, (T, N), plan)
        if key is not None:
            _CALLS.put(key, entry)
    T, shape, plan = entry
    if check_offsets:
        _check_offset_values(offsets, T)
    if out is None:
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
    tr = None
    if plan is not None:
        tr = _run(plan, x, w, offsets, out, None, None, None)
    if trace:
        return out, tr
    return out


__all__ = ["GroupedConfig", "choose_config", "grouped_matmul", "launch", "launch_plan", "launch_planned"]

check_grouped_matmul = _check_inputs  # public: tilewise.kernels.custom_ops runs it in the fake impls
