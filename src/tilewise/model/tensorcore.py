"""Tensor Cores on Hopper: wgmma shapes, how fast shared memory can feed them, and budgets.

FlashAttention-3's tile sizes follow from three steps of arithmetic, each a function here:

1. One wgmma is m64 nN k16 (16-bit types): 2 x 64 x N x 16 FLOPs. An SM does 4096 dense
   bf16 FLOPs per cycle (4 Tensor Cores x 512 multiply-adds x 2), so the instruction takes
   0.5 N cycles (`wgmma`).
2. Feeding it from shared memory at 128 B/cycle (32 banks x 4 bytes): A is 64 x 16 x 2 B =
   2 KB -> 16 cycles, re-read by every instruction; B is N x 16 x 2 B -> 0.25 N cycles.
   Compute >= feed: 0.5 N >= 16 + 0.25 N -> N >= 64; compute / feed = 1.00, 1.33, 1.60 at
   N = 64, 128, 256, tending to 2. With A from registers (RS) the 16 cycles vanish and the
   ratio is 2 at every N (`smem_feed`). The real bandwidth of the operand path wgmma reads
   through is not published: these are order-of-magnitude figures.
3. Registers set N's upper bound: S [64, N] fp32 over a warpgroup's 128 threads is N/2
   registers per thread, O [64, d] is d/2; at N = 256, d = 128 that is 192 of the 255 a
   thread may have, before P, the softmax statistics and addresses (`register_budget`).
   Shared memory holds Q plus `stages` x (K, V) tiles against 227 KB per block, which sets
   the pipeline depth (`smem_budget`). `attention_tile_budget` gives both.

Published figures (from `tilewise.gpus`): 4 Tensor Cores per SM, the dense peaks and
hence 4096 FLOPs/cycle/SM, 255 registers per thread, 65,536 per SM, 227 KB per block,
32 banks x 4 bytes. Model figures (order of magnitude): 128 B/cycle for wgmma's operand
reads, the registers for addresses and bookkeeping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, positive_int, shown, typed
from tilewise.util import json_safe

WGMMA_M = 64  # fixed: one warpgroup's 4 warps x 16 rows
WGMMA_N_MIN, WGMMA_N_MAX, WGMMA_N_STEP = 8, 256, 8
# K of one wgmma: 32 bytes of each row of A and B per instruction.
WGMMA_K = {"bf16": 16, "fp16": 16, "tf32": 8, "fp8": 32, "int8": 32}
WARPGROUP_THREADS = 128
ACC_BYTES = 4  # fp32 (or s32) accumulators
# Model figure, not published: registers a consumer thread keeps for pointers, loop counters,
# barrier phases and temporaries. FA3-like kernels are in this range; ptxas decides the truth.
ADDRESS_REGISTERS = 24

PUBLISHED = {
    "wgmma shapes (m64 nN k16/k8/k32, N = 8..256 step 8)": "PTX ISA, wgmma.mma_async",
    "Tensor Cores per SM, dense peak FLOP/s, clock": "NVIDIA H100 whitepaper / datasheet (tilewise.gpus)",
    "registers: 255 per thread, 65,536 per SM": "CUDA C++ Programming Guide",
    "shared memory: 227 KB per block, 228 KB per SM": "CUDA C++ Programming Guide",
    "32 banks x 4 bytes = 128 B/cycle for ordinary shared-memory loads": "CUDA C++ Programming Guide",
}
MODELLED = {
    "128 B/cycle for the path wgmma reads its operands through": "not published by NVIDIA (an order-of-magnitude figure)",
    "registers for addresses and bookkeeping": f"order of magnitude ({ADDRESS_REGISTERS} per thread assumed)",
    "accumulator layout: fp32 spread evenly over the warpgroup's 128 threads": "exact for wgmma's layout",
}


def _dtype(dtype: str) -> str:
    dt = _gpus.dtype_name(dtype)
    if dt not in WGMMA_K:
        raise InputError(f"dtype must be one of {sorted(WGMMA_K)} for wgmma, got {shown(dtype)}")
    return dt


@typed
def check_n(n: int) -> int:
    """wgmma's N: 8 to 256 in steps of 8."""
    n = positive_int("N", n, minimum=WGMMA_N_MIN, maximum=WGMMA_N_MAX)
    if n % WGMMA_N_STEP:
        raise InputError(f"N must be a multiple of {WGMMA_N_STEP} from {WGMMA_N_MIN} to {WGMMA_N_MAX}, got {n}")
    return n


@typed
def wgmma_shapes(dtype: str = "bf16") -> list[tuple[int, int, int]]:
    """Every dense wgmma shape for `dtype`: (64, N, K) with N = 8, 16, ..., 256 (PTX ISA).

    (Integer wgmma allows fewer N above 32; the 8-step list is the floating-point one.)
    """
    k = WGMMA_K[_dtype(dtype)]
    return [(WGMMA_M, n, k) for n in range(WGMMA_N_MIN, WGMMA_N_MAX + 1, WGMMA_N_STEP)]


@dataclass(frozen=True)
class Wgmma:
    m: int
    n: int
    k: int
    dtype: str
    flops: int  # 2 x m x n x k
    flops_per_cycle_per_sm: int
    cycles: float  # flops / flops_per_cycle_per_sm: the instruction on all 4 Tensor Cores
    macs_per_tensor_core_per_cycle: int

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def wgmma(n: int = 128, dtype: str = "bf16", gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU) -> Wgmma:
    """One wgmma m64 nN kK: its FLOPs and the cycles it occupies the SM's Tensor Cores.

    bf16, N = 128: 2 x 64 x 128 x 16 = 262,144 FLOPs / 4096 per cycle = 64 cycles (0.5 N).
    """
    dt = _dtype(dtype)
    n = check_n(n)
    g = _gpus.get(gpu)
    if not g.wgmma:
        raise InputError(f"gpu must support wgmma (Hopper, sm_90a), got {g.name}")
    k = WGMMA_K[dt]
    flops = 2 * WGMMA_M * n * k
    per_cycle = _gpus.tensor_flops_per_cycle_per_sm(g, dt)
    return Wgmma(WGMMA_M, n, k, dt, flops, per_cycle, flops / per_cycle, g.dense_macs_per_tc_per_cycle[dt])


@typed
def sm_flops_per_cycle(gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU, dtype: str = "bf16") -> dict[str, Any]:
    """4096 = 4 Tensor Cores x 512 MACs x 2, and the peak it implies: x SMs x clock."""
    g = _gpus.get(gpu)
    dt = _gpus.dtype_name(dtype)
    per = _gpus.tensor_flops_per_cycle_per_sm(g, dt)
    return {
        "tensor_cores_per_sm": g.tensor_cores_per_sm,
        "macs_per_tensor_core_per_cycle": g.dense_macs_per_tc_per_cycle[dt],
        "flops_per_cycle_per_sm": per,
        "sms": g.sms,
        "clock_ghz": g.tensor_clock_mhz / 1000,
        "peak_tflops": _gpus.peak_flops(g, dt) / 1e12,
        "formula": f"{per} x {g.sms} x {g.tensor_clock_mhz / 1000:g} GHz = {_gpus.peak_flops(g, dt) / 1e12:.1f} TFLOPS",
    }


@dataclass(frozen=True)
class Feed:
    n: int
    dtype: str
    form: str  # "SS": A and B from shared memory; "RS": A from registers
    a_bytes: int
    b_bytes: int
    a_cycles: float  # 16 for SS, 0 for RS
    b_cycles: float  # 0.25 N
    feed_cycles: float
    compute_cycles: float  # 0.5 N
    ratio: float  # compute / feed: >= 1 means shared memory keeps up
    keeps_up: bool
    smem_bytes_per_cycle: int
    break_even_n: float  # N where compute == feed (64 for SS, 0 for RS)
    limit_ratio: float  # the ratio as N -> infinity (2)
    modelled: str

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def smem_feed(n: int = 64, dtype: str = "bf16", form: str = "SS", gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU) -> Feed:
    """Shared-memory cycles to feed one wgmma against its compute cycles.

    SS: 0.5 N >= 16 + 0.25 N -> N >= 64; ratio 1.00 / 1.33 / 1.60 at 64 / 128 / 256, limit 2.
    RS (A from registers, as FA3 feeds P to P.V): 0.5 N vs 0.25 N, ratio 2 at every N.
    """
    w = wgmma(n, dtype, gpu)
    form = str(form).upper()
    if form not in ("SS", "RS"):
        raise InputError(f"form must be 'SS' (A from shared memory) or 'RS' (A from registers), got {shown(form)}")
    g = _gpus.get(gpu)
    e = _gpus.element_bytes(w.dtype if w.dtype != "tf32" else "fp32")
    bw = g.smem_bytes_per_cycle_per_sm
    a_bytes = WGMMA_M * w.k * e
    b_bytes = w.n * w.k * e
    a_cyc = a_bytes / bw if form == "SS" else 0.0
    b_cyc = b_bytes / bw
    feed = a_cyc + b_cyc
    per_n_compute = w.cycles / w.n
    per_n_b = b_cyc / w.n
    break_even = a_cyc / (per_n_compute - per_n_b) if per_n_compute > per_n_b else float("inf")
    return Feed(
        n=w.n,
        dtype=w.dtype,
        form=form,
        a_bytes=a_bytes,
        b_bytes=b_bytes,
        a_cycles=a_cyc,
        b_cycles=b_cyc,
        feed_cycles=feed,
        compute_cycles=w.cycles,
        ratio=w.cycles / feed,
        keeps_up=w.cycles >= feed,
        smem_bytes_per_cycle=bw,
        break_even_n=break_even,
        limit_ratio=per_n_compute / per_n_b,
        modelled="the wgmma operand path's bandwidth is not published; 128 B/cycle is the bank model",
    )


@typed
def feed_table(
    ns: Sequence[int] = (64, 128, 256), dtype: str = "bf16", form: str = "SS", gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU
) -> list[Feed]:
    """`smem_feed` at each N (N = 64, 128, 256: compute / feed 1.00, 1.33, 1.60)."""
    return [smem_feed(n, dtype, form, gpu) for n in ns]


# ------------------------------------------------------------------ registers


@dataclass(frozen=True)
class RegisterBudget:
    block_m: int
    block_n: int
    head_dim: int
    s: float  # S [block_m, N] fp32 per thread
    p: float  # P [block_m, N] in the input dtype, packed into 32-bit registers
    o: float  # O [block_m, d] fp32
    stats: float  # row max and row sum for the thread's rows
    addresses: float  # model figure
    accumulators: float  # s + o: 128 + 64 = 192 of 255 at N = 256, d = 128
    total: float
    limit: int  # 255 per thread
    fits: bool
    headroom: float
    max_n: int  # the largest N (multiple of 16, <= 256) whose total fits
    max_n_pow2: int  # the largest power of two that fits

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


def _regs(block_m: int, n: int, d: int, dtype: str, addresses: int) -> tuple[float, float, float, float]:
    t = WARPGROUP_THREADS
    e = _gpus.element_bytes(dtype)
    s = block_m * n * ACC_BYTES / 4 / t
    p = block_m * n * e / 4 / t
    o = block_m * d * ACC_BYTES / 4 / t
    # wgmma's accumulator layout gives each thread 2 of every 64 rows (row r and r + 8 of its warp's 16).
    stats = 2 * 2 * (block_m / WGMMA_M)
    return s, p, o, stats


@typed
def register_budget(
    head_dim: int = 128,
    block_n: int = 128,
    block_m: int = 64,
    dtype: str = "bf16",
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
    limit: int | None = None,
    addresses: int = ADDRESS_REGISTERS,
) -> RegisterBudget:
    """Registers per thread of one consumer warpgroup (128 threads) owning block_m rows of Q.

    S [64, N] fp32 -> N/2; P [64, N] bf16 -> N/4; O [64, d] fp32 -> d/2; softmax max and sum for
    the thread's 2 rows -> 4; addresses (a model figure). At N = 256, d = 128 the two
    accumulators alone take 128 + 64 = 192 of the 255 a thread may have.
    """
    d = positive_int("head_dim", head_dim, maximum=512)
    n = positive_int("block_n", block_n, maximum=1024)
    bm = positive_int("block_m", block_m, maximum=512)
    dt = _gpus.dtype_name(dtype)
    g = _gpus.get(gpu)
    lim = g.max_regs_per_thread if limit is None else positive_int("limit", limit, maximum=g.max_regs_per_thread)
    s, p, o, stats = _regs(bm, n, d, dt, addresses)
    total = s + p + o + stats + addresses

    def fits_at(nn: int) -> bool:
        ss, pp, oo, st = _regs(bm, nn, d, dt, addresses)
        return ss + pp + oo + st + addresses <= lim

    max_n = max((nn for nn in range(16, WGMMA_N_MAX + 1, 16) if fits_at(nn)), default=0)
    max_p2 = max((nn for nn in (16, 32, 64, 128, 256) if fits_at(nn)), default=0)
    return RegisterBudget(
        block_m=bm,
        block_n=n,
        head_dim=d,
        s=s,
        p=p,
        o=o,
        stats=stats,
        addresses=addresses,
        accumulators=s + o,
        total=total,
        limit=lim,
        fits=total <= lim,
        headroom=lim - total,
        max_n=max_n,
        max_n_pow2=max_p2,
    )


@typed
def setmaxnreg_split(
    producers: int = 1, consumers: int = 2, producer_regs: int = 24, gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU
) -> dict[str, Any]:
    """Registers per thread a consumer can take after the producer gives its share back.

    65,536 registers over (1 + 2) warpgroups of 128 threads is 170 each; with the producer at 24
    the consumers may rise to floor((65,536 - 128 x 24) / 256 / 8) x 8 = 240 (setmaxnreg counts
    in multiples of 8), under the 255 cap.
    """
    g = _gpus.get(gpu)
    producers = positive_int("producers", producers, minimum=0, maximum=4)
    consumers = positive_int("consumers", consumers, maximum=4)
    producer_regs = positive_int("producer_regs", producer_regs, minimum=24, maximum=g.max_regs_per_thread)
    t = WARPGROUP_THREADS
    total_threads = (producers + consumers) * t
    even = g.regs_per_sm // total_threads
    left = g.regs_per_sm - producers * t * producer_regs
    cons = min(g.max_regs_per_thread, (left // (consumers * t)) // 8 * 8)
    return {
        "threads": total_threads,
        "even_split": even,
        "producer_regs": producer_regs,
        "consumer_regs": cons,
        "limit": g.max_regs_per_thread,
    }


# ------------------------------------------------------------------ shared memory


@dataclass(frozen=True)
class SmemBudget:
    head_dim: int
    block_n: int
    q_rows: int  # block_m x consumers
    stages: int
    q_bytes: int
    kv_stage_bytes: int  # K and V tiles of one stage
    total_bytes: int
    limit_bytes: int  # per-block opt-in limit (227 KB)
    fits: bool
    max_stages: int  # the deepest ring that fits

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def smem_budget(
    head_dim: int = 128,
    block_n: int = 128,
    block_m: int = 64,
    stages: int = 2,
    dtype: str = "bf16",
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
    consumers: int = 2,
) -> SmemBudget:
    """Shared memory of Q (block_m rows per consumer x consumers) + stages x (K, V) [N, d] tiles."""
    d = positive_int("head_dim", head_dim, maximum=512)
    n = positive_int("block_n", block_n, maximum=1024)
    bm = positive_int("block_m", block_m, maximum=512)
    stages = positive_int("stages", stages, maximum=32)
    consumers = positive_int("consumers", consumers, maximum=4)
    g = _gpus.get(gpu)
    e = _gpus.element_bytes(dtype)
    q = bm * consumers * d * e
    kv = 2 * n * d * e
    total = q + stages * kv
    lim = g.smem_per_block_optin
    return SmemBudget(
        head_dim=d,
        block_n=n,
        q_rows=bm * consumers,
        stages=stages,
        q_bytes=q,
        kv_stage_bytes=kv,
        total_bytes=total,
        limit_bytes=lim,
        fits=total <= lim,
        max_stages=max(0, (lim - q) // kv),
    )


@typed
def attention_tile_budget(
    head_dim: int,
    block_n: int,
    block_m: int = 64,
    dtype: str = "bf16",
    stages: int = 2,
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
    consumers: int = 2,
) -> dict[str, Any]:
    """Registers per thread and shared memory of a FlashAttention forward tile, against their limits.

    `block_m` is the rows of Q one consumer warpgroup (128 threads) owns: 64 in FA3, one wgmma's M;
    `consumers` warpgroups share each K/V stage (2 in FA3). For a Triton kernel whose 4 warps
    own BLOCK_M rows, pass block_m=BLOCK_M, consumers=1.

    Returns a dict:
      registers: s, p, o, stats, addresses, total, limit (255), fits, headroom, max_n, max_n_pow2
      smem: q_bytes, kv_stage_bytes, stages, total_bytes, limit_bytes (227 KB), fits, max_stages
      fits: both fit.

    >>> b = attention_tile_budget(128, 128)
    >>> b["registers"]["s"], b["registers"]["o"], b["smem"]["total_bytes"] // 1024, b["fits"]
    (64.0, 64.0, 160, True)
    """
    r = register_budget(head_dim, block_n, block_m, dtype, gpu)
    s = smem_budget(head_dim, block_n, block_m, stages, dtype, gpu, consumers)
    return {
        "head_dim": r.head_dim,
        "block_n": r.block_n,
        "block_m": r.block_m,
        "consumers": s.q_rows // r.block_m,
        "dtype": _gpus.dtype_name(dtype),
        "gpu": _gpus.get(gpu).key,
        "registers": r.to_dict(),
        "smem": s.to_dict(),
        "fits": r.fits and s.fits,
    }


__all__ = [
    "ADDRESS_REGISTERS",
    "MODELLED",
    "PUBLISHED",
    "WGMMA_K",
    "WGMMA_M",
    "Feed",
    "RegisterBudget",
    "SmemBudget",
    "Wgmma",
    "attention_tile_budget",
    "check_n",
    "feed_table",
    "register_budget",
    "setmaxnreg_split",
    "sm_flops_per_cycle",
    "smem_budget",
    "smem_feed",
    "wgmma",
    "wgmma_shapes",
]


@typed
def ffn_register_budget(block_m: int, block_n: int, head_dim: int, dtype: str = "bf16") -> dict[str, float]:
    """Registers per thread of one consumer warpgroup owning block_m token rows (the attention budget, FFN-shaped).

    g and u [M, N] fp32 (two up-projections where attention has one S), a = silu(g) u [M, N] in
    the input dtype (attention's P), the output accumulator [M, d_h] fp32 (attention's O), plus
    the address registers of `ADDRESS_REGISTERS`; no softmax statistics.
    """
    t = WARPGROUP_THREADS
    acc = ACC_BYTES
    e = _gpus.element_bytes(dtype)
    gu = 2 * block_m * block_n * acc / 4 / t
    a = block_m * block_n * e / 4 / t
    o = block_m * head_dim * acc / 4 / t
    total = gu + a + o + ADDRESS_REGISTERS
    return dict(gu=gu, a=a, o=o, addresses=ADDRESS_REGISTERS, total=total)
