"""The Tensor-Core instruction of each architecture, and who issues and feeds it.

Hopper issues wgmma from a warpgroup, Blackwell tcgen05 from one thread, and Ampere mma.sync works on
warp fragments; the reports need one place that says, per registry GPU, which MMA instruction
the section is about (`path`):

* Ampere (sm_80): `mma.sync` m16n8k16 for 16-bit types, issued by one warp; operands come from
  registers (loaded from shared memory with `ldmatrix`); accumulators in registers; global ->
  shared copies with `cp.async`, each thread copying its 4, 8 or 16 bytes; no TMA, no wgmma, no
  setmaxnreg (which, like wgmma, needs sm_90a).
* Ada (sm_89): Ampere's path (mma.sync from one warp, cp.async, no TMA, no wgmma, no setmaxnreg),
  with fp8 Tensor-Core rates.
* Hopper (sm_90a): `wgmma.mma_async` m64nNk16, issued by a warpgroup (4 warps, 128 threads);
  B (and A, or A from registers) from shared memory; accumulators in registers; TMA copies
  issued by one thread (`tilewise.model.tensorcore` holds the feed and register derivations).
* Blackwell (sm_100a): `tcgen05.mma`, issued by one thread; the accumulator lives in Tensor
  Memory (TMEM, 128 lanes x 512 columns of 32-bit cells per SM), A comes from shared memory or
  TMEM, B from shared memory; `tcgen05.ld` brings results back to registers.

Facts checked against: PTX ISA (mma.sync / wmma shapes: f16/bf16 m16n16k16, tf32 m16n16k8, no
fp8 wmma; wgmma m64nNk16, N 8..256 step 8); CUTLASS's tcgen05 MMA programming guide (single-thread
launch, accumulator always in TMEM, A in SMEM or TMEM, B in SMEM); Triton's Gluon tcgen05
tutorial (TMEM: 128 rows x 512 columns of 32-bit cells per SM); LLVM NVPTX review D155851 (wgmma and
setmaxnreg need sm_90a). K per instruction is 32 bytes of
each row for every dense kind here (k16 for 16-bit types, k8 for tf32, k32 for 8-bit).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, positive_int, typed
from tilewise.util import json_safe

# K of one dense MMA row: 32 bytes of A's row per instruction (mma.sync, wgmma and tcgen05 alike).
K_BYTES = 32
TMEM_LANES = 128
TMEM_COLUMNS = 512  # 32-bit cells per lane: 128 x 512 x 4 B = 256 KB per SM
TCGEN05_M = 128  # rows of one single-CTA tcgen05.mma as FA4/CUTLASS attention use it
MMA_SYNC_M, MMA_SYNC_N = 16, 8


@typed
def k_of(dtype: str) -> int:
    """K of one MMA instruction for `dtype`: 16 for bf16/fp16, 8 for tf32, 32 for fp8/int8."""
    dt = _gpus.dtype_name(dtype)
    return K_BYTES // _gpus.element_bytes(dt if dt != "tf32" else "fp32")


@dataclass(frozen=True)
class MmaPath:
    arch: str  # the GPU's architecture (ampere, ada, hopper, blackwell)
    name: str  # "mma.sync", "wgmma", "tcgen05.mma"
    instruction: str  # e.g. "mma.sync m16n8k16"
    issued_by: str  # "one warp", "one warpgroup (4 warps)", "one thread"
    issue_threads: int  # 32, 128, 1
    m: int  # rows of one instruction: 16, 64, 128
    k: int
    accumulator: str  # "registers" or "tensor memory"
    operands: str  # where A and B come from
    copies: str  # how global memory reaches shared memory
    tma: bool
    async_mma: bool  # the MMA returns before its result is ready (wgmma, tcgen05)
    # The instruction family whose rules a report walks: "ampere" (mma.sync, on Ampere and Ada alike),
    # "hopper" (wgmma), "blackwell" (tcgen05).
    family: str = "ampere"

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def path(gpu: str | _gpus.GPU, dtype: str = "bf16") -> MmaPath:
    """The MMA path of `gpu` for `dtype` (InputError if the GPU has no Tensor-Core rate for it)."""
    g = _gpus.get(gpu)
    dt = _gpus.dtype_name(dtype)
    _gpus.tensor_flops_per_cycle_per_sm(g, dt)  # refuses a dtype the GPU's Tensor Cores lack
    k = k_of(dt)
    if g.tcgen05:
        return MmaPath(
            arch=g.arch,
            name="tcgen05.mma",
            instruction=f"tcgen05.mma m{TCGEN05_M}nNk{k}",
            issued_by="one thread",
            issue_threads=1,
            m=TCGEN05_M,
            k=k,
            accumulator="tensor memory",
            operands="A from shared memory or tensor memory, B from shared memory",
            copies="TMA, issued by one thread",
            tma=g.tma,
            async_mma=True,
            family="blackwell",
        )
    if g.wgmma:
        return MmaPath(
            arch=g.arch,
            name="wgmma",
            instruction=f"wgmma.mma_async m64nNk{k}",
            issued_by="one warpgroup (4 warps)",
            issue_threads=128,
            m=64,
            k=k,
            accumulator="registers",
            operands="B from shared memory, A from shared memory or registers",
            copies="TMA, issued by one thread",
            tma=g.tma,
            async_mma=True,
            family="hopper",
        )
    if g.arch in ("ampere", "ada"):  # Ada (sm_89) keeps Ampere's mma.sync and cp.async; it adds fp8 rates
        return MmaPath(
            arch=g.arch,
            name="mma.sync",
            instruction=f"mma.sync m{MMA_SYNC_M}n{MMA_SYNC_N}k{k}",
            issued_by="one warp",
            issue_threads=32,
            m=MMA_SYNC_M,
            k=k,
            accumulator="registers",
            operands="A and B from registers, loaded from shared memory with ldmatrix",
            copies="cp.async, every thread copying its own 4-16 bytes",
            tma=False,
            async_mma=False,
        )
    raise InputError(f"gpu must be an Ampere, Ada, Hopper or Blackwell GPU, got {g.key} ({g.arch})")


@typed
def flops_per_cycle_per_tensor_core(gpu: str | _gpus.GPU, dtype: str = "bf16") -> int:
    """Dense FLOPs one Tensor Core (one SM partition) does per cycle: A100 bf16 2 x 256 = 512."""
    g = _gpus.get(gpu)
    return _gpus.tensor_flops_per_cycle_per_sm(g, dtype) // g.tensor_cores_per_sm


@dataclass(frozen=True)
class WarpFeed:
    """Ampere: shared memory -> registers (ldmatrix) for one k-step of S = Q K^T over a block."""

    rows: int  # rows of Q per block
    warps: int  # warps splitting the rows; each reads the whole K tile
    n: int
    q_in_registers: bool
    compute_cycles: float  # 2 x rows x N x k / FLOPs per cycle per SM
    feed_cycles: float  # bytes read from shared memory / 128 B per cycle
    ratio: float  # compute / feed: >= 1 means shared memory keeps up
    break_even_rows_per_warp: float  # rows per warp where compute == feed (Q in registers)

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def warp_feed(
    rows: int,
    warps: int,
    n: int,
    dtype: str = "bf16",
    gpu: str | _gpus.GPU = "a100-sxm",
    q_in_registers: bool = False,
) -> WarpFeed:
    """Compute vs shared-memory feed of S = Q K^T when warps split the rows and each reads all of K.

    Per k-step (32 bytes of each row) the block computes 2 x rows x N x k FLOPs on all 4 Tensor
    Cores; every warp loads the whole K slice [N, k] through ldmatrix, and its own rows of Q unless
    Q stays in registers. With Q in registers the ratio is rows per warp x k x 2 x 128 /
    (FLOPs per cycle per SM x 32 B): on an A100 in bf16, rows per warp / 16 -- one 16-row slab per
    warp just keeps up, which is why the rows, not N, carry this bound on Ampere. The 128 B/cycle
    bank model is an order of magnitude: NVIDIA does not publish the operand path's bandwidth.
    """
    g = _gpus.get(gpu)
    dt = _gpus.dtype_name(dtype)
    rows, warps, n = positive_int("rows", rows), positive_int("warps", warps, maximum=32), positive_int("n", n)
    k = k_of(dt)
    e = K_BYTES // k
    per_cycle = _gpus.tensor_flops_per_cycle_per_sm(g, dt)
    bw = g.smem_bytes_per_cycle_per_sm
    compute = 2 * rows * n * k / per_cycle
    b = warps * n * k * e
    a = 0 if q_in_registers else rows * k * e
    feed = (a + b) / bw
    # With Q in registers: compute = feed  <=>  rows / warps = per_cycle * e / (2 * bw)
    be = per_cycle * e / (2 * bw)
    return WarpFeed(rows, warps, n, bool(q_in_registers), compute, feed, compute / feed, be)


@dataclass(frozen=True)
class InstructionFeed:
    """One MMA instruction of M rows: compute cycles against the shared-memory cycles of its operands."""

    m: int
    n: int
    k: int
    a_from_smem: bool
    a_cycles: float  # M x k x bytes / 128 B per cycle (0 when A comes from registers or TMEM)
    b_cycles: float
    compute_cycles: float  # 2 x M x N x k / FLOPs per cycle per SM
    ratio: float  # compute / feed
    break_even_n: float  # N where compute == feed (inf when it never is)
    limit_ratio: float  # the ratio as N grows

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def instruction_feed(
    m: int, n: int, dtype: str = "bf16", gpu: str | _gpus.GPU = "b200", a_from_smem: bool = True
) -> InstructionFeed:
    """The shared-memory feed arithmetic (0.5 N >= 16 + 0.25 N at M = 64) for an MMA of M rows on any GPU (wgmma: M = 64; tcgen05: 64 or 128).

    B200, bf16, M = 128: compute 2 x 128 x N x 16 / 8192 = 0.5 N cycles; A [128, 16] = 4 KB = 32 cycles,
    B 0.25 N: N >= 128 to keep up. At M = 64 compute is 0.25 N, never more than the feed: the Tensor
    Cores run twice as fast as Hopper's against the same 128 B/cycle, so the rows must double.
    """
    g = _gpus.get(gpu)
    dt = _gpus.dtype_name(dtype)
    k = k_of(dt)
    e = K_BYTES // k
    per_cycle = _gpus.tensor_flops_per_cycle_per_sm(g, dt)
    bw = g.smem_bytes_per_cycle_per_sm
    a = m * k * e / bw if a_from_smem else 0.0
    b_per_n = k * e / bw
    c_per_n = 2 * m * k / per_cycle
    be = a / (c_per_n - b_per_n) if c_per_n > b_per_n else float("inf")
    compute = c_per_n * n
    feed = a + b_per_n * n
    return InstructionFeed(m, n, k, bool(a_from_smem), a, b_per_n * n, compute, compute / feed, be, c_per_n / b_per_n)


@dataclass(frozen=True)
class TmemBudget:
    """Blackwell: Tensor Memory columns taken by S [128, N] and O [128, d] fp32 accumulators."""

    n: int
    head_dim: int
    tiles: int  # Q tiles in flight (2 when two softmax groups ping-pong)
    columns: int  # tiles x (N + d)
    limit: int  # 512
    fits: bool
    max_n: int  # the largest N (multiple of 16) with tiles x (N + d) <= 512

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def tmem_budget(n: int, head_dim: int, tiles: int = 2) -> TmemBudget:
    """S and O of `tiles` Q tiles in TMEM: each [128, x] fp32 tile takes x of the 512 columns."""
    n, head_dim, tiles = (
        positive_int("n", n),
        positive_int("head_dim", head_dim),
        positive_int("tiles", tiles, maximum=64),
    )
    cols = tiles * (n + head_dim)
    max_n = max(0, (TMEM_COLUMNS // tiles - head_dim) // 16 * 16)
    return TmemBudget(n, head_dim, tiles, cols, TMEM_COLUMNS, cols <= TMEM_COLUMNS, max_n)


__all__ = [
    "K_BYTES",
    "MMA_SYNC_M",
    "MMA_SYNC_N",
    "TCGEN05_M",
    "TMEM_COLUMNS",
    "TMEM_LANES",
    "InstructionFeed",
    "MmaPath",
    "TmemBudget",
    "WarpFeed",
    "flops_per_cycle_per_tensor_core",
    "instruction_feed",
    "k_of",
    "path",
    "tmem_budget",
    "warp_feed",
]
