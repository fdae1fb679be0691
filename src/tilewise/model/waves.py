"""Waves: how a grid of blocks is laid over the SMs, and what the last, partial wave costs.

C[64, 24576] in 64 x 128 tiles is 192 blocks; on 132 SMs that is 1.45 waves: the second wave runs 60 blocks
while 72 SMs sit idle, so the grid as a whole uses 192 / (2 x 132) = 73% of the machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, fraction, positive_int, typed
from tilewise.model import latency, traffic
from tilewise.util import cdiv, json_safe


@dataclass(frozen=True)
class Waves:
    blocks: int
    slots: int  # blocks that run at once: SMs x blocks per SM
    waves: float  # blocks / slots
    full_waves: int
    tail_blocks: int  # blocks in the last, partial wave (0 if none)
    rounds: int  # ceil(waves): how many rounds the grid takes
    efficiency: float  # blocks / (rounds x slots): useful share of the slots over the whole grid

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def grid_waves(blocks: int, sms: int, blocks_per_sm: int = 1) -> Waves:
    """Waves of a grid of equal blocks over `sms` SMs holding `blocks_per_sm` each."""
    blocks = positive_int("blocks", blocks)
    sms = positive_int("sms", sms)
    blocks_per_sm = positive_int("blocks_per_sm", blocks_per_sm)
    slots = sms * blocks_per_sm
    full, tail = divmod(blocks, slots)
    rounds = full + (1 if tail else 0)
    return Waves(
        blocks=blocks,
        slots=slots,
        waves=blocks / slots,
        full_waves=full,
        tail_blocks=tail,
        rounds=rounds,
        efficiency=blocks / (rounds * slots),
    )


# ----------------------------------------------------------------- grouped GEMM schedule
#
# The experts share K and N, but each has its own M. A prefix sum over their tile counts
# splits the global tile index into ranges; the range an index falls into names its expert,
# found with a binary search. The persistent grouped GEMM kernel
# (tilewise.kernels.grouped_gemm) walks tiles in exactly this order; tests check the kernel's
# schedule against these functions.


@dataclass(frozen=True)
class GroupedSchedule:
    rows_per_expert: tuple[int, ...]
    block_m: int
    block_n: int
    n: int
    n_tiles: int  # ceil(n / block_n), the same for every expert
    m_tiles: tuple[int, ...]  # ceil(rows / block_m) per expert
    tiles_per_expert: tuple[int, ...]  # m_tiles x n_tiles
    prefix: tuple[int, ...]  # exclusive prefix sum of tiles_per_expert, length E + 1
    total_tiles: int

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def grouped_schedule(rows_per_expert: Sequence[int], block_m: int, n: int, block_n: int) -> GroupedSchedule:
    """Per-expert tile counts and their prefix sum for a grouped GEMM with shared K and N."""
    rows = tuple(positive_int("rows per expert", r, minimum=0) for r in rows_per_expert)
    block_m = positive_int("block_m", block_m)
    block_n = positive_int("block_n", block_n)
    n = positive_int("n", n)
    n_tiles = cdiv(n, block_n)
    m_tiles = tuple(cdiv(r, block_m) for r in rows)
    tiles = tuple(mt * n_tiles for mt in m_tiles)
    prefix = [0]
    for t in tiles:
        prefix.append(prefix[-1] + t)
    return GroupedSchedule(rows, block_m, block_n, n, n_tiles, m_tiles, tiles, tuple(prefix), prefix[-1])


@typed
def tile_owner(prefix: Sequence[int], tile: int) -> tuple[int, int]:
    """(expert, local tile) of a global tile index: binary search for the last prefix <= tile.

    Empty experts have prefix[e] == prefix[e + 1] and are never returned.
    """
    lo, hi = 0, len(prefix) - 1  # invariant: prefix[lo] <= tile < prefix[hi]
    if not (0 <= tile < prefix[-1]):
        raise ValueError(f"tile must be in [0, {prefix[-1]}), got {tile}")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if prefix[mid] <= tile:
            lo = mid
        else:
            hi = mid
    return lo, tile - prefix[lo]


@typed
def local_tile_coords(schedule: GroupedSchedule, expert: int, local: int) -> tuple[int, int]:
    """(m tile, n tile) of an expert's local tile: m varies fastest, so consecutive tiles share
    one [K, block_n] slice of that expert's weight while it sits in L2."""
    mt = schedule.m_tiles[expert]
    return local % mt, local // mt


@typed
def persistent_tiles(total_tiles: int, programs: int, program: int) -> list[int]:
    """Tiles a persistent program takes when each of `programs` strides over the tile space."""
    total_tiles = positive_int("total_tiles", total_tiles, minimum=0)
    programs = positive_int("programs", programs)
    program = positive_int("program", program, minimum=0, maximum=programs - 1)
    return list(range(program, total_tiles, programs))


# ----------------------------------------------------------------- persistent schedules
#
# A persistent grouped GEMM launches as many blocks as SMs, keeps each block resident and lets
# it loop, pulling tiles from a scheduler: that saves the repeated launches and pipeline setups.
# And: prologue and epilogue are negligible when
# the K loop is long and show when it is short; MoE is the classic case.


@dataclass(frozen=True)
class PersistentSchedule:
    tiles: int
    programs: int  # min(tiles, SMs x blocks per SM)
    max_tiles_per_program: int
    min_tiles_per_program: int
    efficiency: float  # tiles / (programs x max tiles per program)

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def persistent_schedule(total_tiles: int, sms: int, blocks_per_sm: int = 1) -> PersistentSchedule:
    """A persistent grid over `total_tiles`: each program strides by the number of programs."""
    total_tiles = positive_int("total_tiles", total_tiles)
    slots = positive_int("sms", sms) * positive_int("blocks_per_sm", blocks_per_sm)
    programs = min(total_tiles, slots)
    hi = cdiv(total_tiles, programs)
    lo = total_tiles // programs
    return PersistentSchedule(total_tiles, programs, hi, lo, total_tiles / (programs * hi))


# ----------------------------------------------------------------- stream-K
#
# A persistent GEMM whose tiles do not fill whole waves leaves SMs idle in the last one: 72 tiles of 128 x 256
# (384 x 6144) keep 72 of 132 SMs busy. Stream-K (Osama et al., 2023) cuts the tiles' work into K steps and deals
# the steps out evenly, so a tile may be summed by two or more CTAs: the one that runs the tile's first K step
# owns it and adds the others' fp32 partials before its epilogue.
#
# Here every row of tiles is a lane: the grid is `lanes x per_lane` CTAs, and the CTAs of one lane deal out
# that row's tiles_n x k_steps steps (column by column, K inside), at the same boundaries in every lane. CTA i
# of each lane is then at the same B column and K step at the same time, so the rows that share a B tile read
# it from L2 together, as a data-parallel wave does. Dealt in one line over all tiles instead (the paper's
# order), the rows of one column ran at different K steps and B went through HBM once per row: 600 x 11008 x
# 4096 (B 90 MB, more than the 50 MB L2) took 141 us against 95 us data-parallel on the H200
# (benchmarks/results/h200/gemm_stream_k.json). tilewise.kernels.gemm_gluon computes the same ranges in the
# kernel; `stream_k_segments` lists what each CTA does, for the model's fix-up term and the schedule's tests.

STREAM_K_MIN_STEPS = 4  # a CTA takes at least 4 K steps: fewer and its pipeline fill outweighs the balance


@dataclass(frozen=True)
class StreamKSplit:
    lanes: int  # rows of tiles, one lane each
    per_lane: int  # CTAs dealing out one lane's steps
    lane_units: int  # K steps of one lane: tiles_n x k_steps
    k_steps: int

    @property
    def grid(self) -> int:
        return self.lanes * self.per_lane

    def start(self, i: int) -> int:
        """The first step of CTA i of its lane (the kernel's formula)."""
        return i * self.lane_units // self.per_lane

    def to_dict(self) -> dict[str, Any]:
        return json_safe({**asdict(self), "grid": self.grid})


@typed
def stream_k_split(tiles_m: int, tiles_n: int, k_steps: int, sms: int) -> StreamKSplit:
    """How a stream-K launch over tiles_m x tiles_n output tiles of `k_steps` K steps divides among `sms` SMs."""
    tiles_m = positive_int("tiles_m", tiles_m)
    tiles_n = positive_int("tiles_n", tiles_n)
    k_steps = positive_int("k_steps", k_steps)
    sms = positive_int("sms", sms)
    if tiles_m > sms:
        raise InputError(f"stream-K takes at most one row of tiles per SM ({sms}), got tiles_m={tiles_m}")
    units = tiles_n * k_steps
    per_lane = max(1, min(sms // tiles_m, units // STREAM_K_MIN_STEPS))
    return StreamKSplit(lanes=tiles_m, per_lane=per_lane, lane_units=units, k_steps=k_steps)


@dataclass(frozen=True)
class StreamKSegment:
    cta: int
    tile: tuple[int, int]  # (row, column) of tiles
    k0: int  # first K step
    k1: int  # one past the last
    role: str  # "whole" (epilogue alone), "owner" (adds partials, then the epilogue), "partial" (writes one)
    partners: tuple[int, ...] = ()  # owner: the CTAs whose partials it adds, in the order it waits for them


def stream_k_segments(split: StreamKSplit) -> list[list[StreamKSegment]]:
    """Every CTA's work in its order (CTA = lane x per_lane + i): its steps, cut at the tiles' edges."""
    out: list[list[StreamKSegment]] = []
    ks = split.k_steps
    for cta in range(split.grid):
        lane, i = divmod(cta, split.per_lane)
        segs = []
        u, end = split.start(i), split.start(i + 1)
        while u < end:
            col, k0 = divmod(u, ks)
            k1 = min(ks, k0 + end - u)
            tile = (lane, col)
            if k0 > 0:
                segs.append(StreamKSegment(cta, tile, k0, k1, "partial"))
            elif k1 == ks:
                segs.append(StreamKSegment(cta, tile, k0, k1, "whole"))
            else:
                partners = []
                other = i + 1
                while split.start(other) < (col + 1) * ks:
                    partners.append(lane * split.per_lane + other)
                    other += 1
                segs.append(StreamKSegment(cta, tile, k0, k1, "owner", tuple(partners)))
            u += k1 - k0
        out.append(segs)
    return out


@typed
def stream_k_summary(tiles_m: int, tiles_n: int, k_steps: int, sms: int) -> dict[str, Any] | None:
    """What the deal does to a grid, for reports: its split, the busiest CTA's steps, the SM time doing work
    (all steps over SMs x the busiest CTA's steps, as `Waves.efficiency` counts SM-rounds), how many tile parts
    end as partials and the longest chain of partials an owner adds. None when there are more rows of tiles
    than SMs (a lane per row)."""
    tiles_m = positive_int("tiles_m", tiles_m)
    if tiles_m > positive_int("sms", sms):
        return None
    sk = stream_k_split(tiles_m, tiles_n, k_steps, sms)
    segs = stream_k_segments(sk)
    steps = [sum(s.k1 - s.k0 for s in cta) for cta in segs]
    busiest = max(steps)
    owners = [len(s.partners) for cta in segs for s in cta if s.role == "owner"]
    return {
        **sk.to_dict(),
        "cta_steps": steps,  # each CTA's K steps, in CTA order
        "busiest_steps": busiest,
        "efficiency": tiles_m * tiles_n * k_steps / (sms * busiest),
        "partials": sum(1 for cta in segs for s in cta if s.role == "partial"),
        "max_partners": max(owners, default=0),
    }


# Model figures (order of magnitude): cycles from a TMA load's issue to its data in shared
# memory, and of setting up a block's pipeline (barrier init, descriptor prefetch).
LOAD_LATENCY_CYCLES = 600
SETUP_CYCLES = 200


@dataclass(frozen=True)
class TileCost:
    block_m: int
    block_n: int
    block_k: int
    k: int
    k_steps: int  # the main loop's length: ceil(k / block_k)
    step_cycles: float  # max(MMA cycles, load cycles at one SM's share of HBM)
    step_bound: str  # "compute" or "memory"
    mainloop_cycles: float
    prologue_cycles: float  # setup + the first tile's load latency and transfer
    epilogue_cycles: float  # writing the C tile at one SM's share of HBM
    share: float  # (prologue + epilogue) / (prologue + main loop + epilogue)

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def tile_cost(
    block_m: int,
    block_n: int,
    k: int,
    block_k: int = 64,
    dtype: str = "bf16",
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
    load_latency: float = LOAD_LATENCY_CYCLES,
    setup: float = SETUP_CYCLES,
    b_hit_rate: float = 0.0,
) -> TileCost:
    """Cycles of one output tile: prologue, main loop over K, epilogue; and their share.

    Per K step the block multiplies [block_m, block_k] x [block_k, block_n]; the step takes the
    longer of its MMA cycles (2 bm bn bk / FLOPs per cycle per SM) and loading its B tile at one
    SM's share of HBM bandwidth (every SM streaming at once; A, re-read by every N tile, is
    taken to hit in L2; `b_hit_rate` of B hits too). Prologue: setup + load latency + the first step's load. Epilogue: the
    C tile written at the same share. Latency and setup are order-of-magnitude model figures.
    """
    bm, bn = positive_int("block_m", block_m), positive_int("block_n", block_n)
    k, bk = positive_int("k", k), positive_int("block_k", block_k)
    g = _gpus.get(gpu)
    e = _gpus.element_bytes(dtype)
    per_cycle = _gpus.tensor_flops_per_cycle_per_sm(g, dtype)
    bw = g.hbm_bytes_per_s / g.sms / (g.tensor_clock_mhz * 1e6)
    steps = cdiv(k, bk)
    mma = 2 * bm * bn * bk / per_cycle

    hit = fraction("b_hit_rate", b_hit_rate)
    # B (weights) streams from HBM, less what L2 serves; A, re-read by every N tile, is taken to hit L2.
    ld = bn * bk * e * (1 - hit) / bw
    step = max(mma, ld)
    main = steps * step
    pro = setup + load_latency + ld
    epi = bm * bn * e / bw
    return TileCost(
        block_m=bm,
        block_n=bn,
        block_k=bk,
        k=k,
        k_steps=steps,
        step_cycles=step,
        step_bound="compute" if mma >= ld else "memory",
        mainloop_cycles=main,
        prologue_cycles=pro,
        epilogue_cycles=epi,
        share=(pro + epi) / (pro + main + epi),
    )


@dataclass(frozen=True)
class GroupedGemmCost:
    schedule: GroupedSchedule
    tile: TileCost
    rows: int
    padded_rows: int  # sum of m_tiles x block_m
    m_fill: float  # rows / padded rows: how much of each M tile carries data
    wgmma_fill: float  # rows / rows rounded up to wgmma's 64, per expert
    persistent: PersistentSchedule
    waves: Waves  # the same tiles as a plain grid, one block per SM
    cycles_persistent: float  # one prologue per program, then main loop + epilogue per tile
    cycles_per_launch: float  # every tile pays prologue + main loop + epilogue, in waves
    overhead_share_persistent: float
    overhead_share_per_launch: float

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return json_safe(d)


@typed
def grouped_gemm_cost(
    rows_per_expert: Sequence[int],
    k: int,
    n: int,
    block_m: int = 64,
    block_n: int = 128,
    block_k: int = 64,
    dtype: str = "bf16",
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
) -> GroupedGemmCost:
    """A grouped GEMM's tiles (via `grouped_schedule`), their fill, and the prologue/epilogue share.

    The longest program sets the time: persistent = prologue + max tiles per program x (main
    loop + epilogue); one block per tile = rounds x (prologue + main loop + epilogue).
    """
    g = _gpus.get(gpu)
    sched = grouped_schedule(rows_per_expert, block_m, n, block_n)
    if sched.total_tiles == 0:
        raise InputError(f"rows_per_expert must route at least one row, got {list(rows_per_expert)[:8]}")
    used = sum(1 for t in sched.m_tiles if t)
    # The schedule walks an expert's M tiles first (local_tile_coords), so each [K, block_n] slice of
    # its weight comes from HBM once and from L2 for the expert's other M tiles.
    b_hit = 1 - used / sum(sched.m_tiles)
    tc = tile_cost(block_m, block_n, k, block_k, dtype, gpu, b_hit_rate=b_hit)
    rows = sum(sched.rows_per_expert)
    padded = sum(sched.m_tiles) * block_m
    wg = sum(cdiv(r, 64) * 64 for r in sched.rows_per_expert)
    ps = persistent_schedule(sched.total_tiles, g.sms)
    w = grid_waves(sched.total_tiles, g.sms)
    per_tile = tc.prologue_cycles + tc.mainloop_cycles + tc.epilogue_cycles
    cyc_p = tc.prologue_cycles + ps.max_tiles_per_program * (tc.mainloop_cycles + tc.epilogue_cycles)
    cyc_l = w.rounds * per_tile
    main_p = ps.max_tiles_per_program * tc.mainloop_cycles
    main_l = w.rounds * tc.mainloop_cycles
    return GroupedGemmCost(
        schedule=sched,
        tile=tc,
        rows=rows,
        padded_rows=padded,
        m_fill=rows / padded,
        wgmma_fill=rows / wg,
        persistent=ps,
        waves=w,
        cycles_persistent=cyc_p,
        cycles_per_launch=cyc_l,
        overhead_share_persistent=1 - main_p / cyc_p,
        overhead_share_per_launch=1 - main_l / cyc_l,
    )


@typed
def persistent_prologue_share(
    rows_per_expert: Sequence[int],
    k: int,
    n: int,
    block_m: int,
    block_n: int,
    block_k: int,
    dtype: str = "bf16",
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
) -> float:
    """Share of a persistent grouped-GEMM program's time spent outside the steady K loop.

    A persistent program keeps its pipeline between tiles, so per tile it pays only one HBM
    latency to refill (the model's `latency.LATENCY_CYCLES["hbm"]`) and the write of the C tile;
    the steady part moves the tile's A and B slices at the program's 1/SMs share of HBM bandwidth,
    or computes at its share of the Tensor Cores, whichever is longer. (`tile_cost` is the
    per-launch counterpart, where every tile also pays the setup.) On the H200 this predicted
    2.6% at 8 rows/expert and 4.7% at 128 (E 128, K 2048, N 1536), against 2.4% and 5.0% measured
    by fusing the tile loop into the K loop (docs/kernels.md).
    """
    g = _gpus.get(gpu)
    sched = grouped_schedule(rows_per_expert, block_m, n, block_n)
    if sched.total_tiles == 0:
        return 0.0
    clock = g.tensor_clock_mhz * 1e6
    per_sm_bw = g.hbm_bytes_per_s / g.sms
    per_sm_flops = _gpus.peak_flops(g, dtype) / g.sms
    e = _gpus.element_bytes(dtype)
    steady = max(
        traffic.gemm_tile_bytes(block_m, block_n, k, dtype) / per_sm_bw,
        traffic.gemm_tile_flops(block_m, block_n, k) / per_sm_flops,
    )
    overhead = latency.LATENCY_CYCLES["hbm"] / clock + block_m * block_n * e / per_sm_bw
    return overhead / (overhead + steady)


@typed
def grouped_tile(rows_per_expert: float, n: int = 1536, glu: bool = False) -> tuple[int, int, int]:
    """(block_m, block_n, block_k) the persistent grouped GEMM uses for bf16/fp16 at this many rows per expert.

    Measured on the H200, 2026-11-30 (E 128, K 2048, N 1536; tilewise.kernels.grouped_gemm.choose_config
    has the timings): 16 rows per tile up to 16 rows per expert, 32 up to 32, 64 up to 64, 128 above;
    256 columns except at <= 16 rows (128); the MoE gate/up GEMM (glu) halves the columns. Both the
    kernel and `tilewise explain moe` read this, so the report predicts the tiles the kernel runs.
    """
    if rows_per_expert <= 16:
        t = (16, 128, 128)
    elif rows_per_expert <= 32:
        t = (32, 256, 64)
    elif rows_per_expert <= 64:
        t = (64, 256, 64)
    else:
        t = (128, 256, 64)
    if glu:
        t = (t[0], max(16, t[1] // 2), t[2])
    return t
