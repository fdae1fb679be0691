"""Waves: how a grid of blocks is laid over the SMs, and what the last, partial wave costs.

The GEMM article: 192 blocks on 132 SMs is 1.45 waves; the second wave runs 60 blocks
while 72 SMs sit idle, so the grid as a whole uses 192 / (2 x 132) = 73% of the machine.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tilewise.errors import positive_int


@dataclass(frozen=True)
class Waves:
    blocks: int
    slots: int  # blocks that run at once: SMs x blocks per SM
    waves: float  # blocks / slots
    full_waves: int
    tail_blocks: int  # blocks in the last, partial wave (0 if none)
    rounds: int  # ceil(waves): how many rounds the grid takes
    efficiency: float  # blocks / (rounds x slots): useful share of the slots over the whole grid

    def to_dict(self) -> dict:
        return asdict(self)


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
# The tips document: "The experts share K and N, but each has its own M. Take a prefix sum
# over their tile counts; whichever range a global tile index falls into names its expert,
# found with a binary search." The persistent grouped GEMM kernel
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

    def to_dict(self) -> dict:
        return asdict(self)


def grouped_schedule(rows_per_expert, block_m: int, n: int, block_n: int) -> GroupedSchedule:
    """Per-expert tile counts and their prefix sum for a grouped GEMM with shared K and N."""
    rows = tuple(positive_int("rows per expert", r, minimum=0) for r in rows_per_expert)
    block_m = positive_int("block_m", block_m)
    block_n = positive_int("block_n", block_n)
    n = positive_int("n", n)
    n_tiles = -(-n // block_n)
    m_tiles = tuple(-(-r // block_m) for r in rows)
    tiles = tuple(mt * n_tiles for mt in m_tiles)
    prefix = [0]
    for t in tiles:
        prefix.append(prefix[-1] + t)
    return GroupedSchedule(rows, block_m, block_n, n, n_tiles, m_tiles, tiles, tuple(prefix), prefix[-1])


def tile_owner(prefix, tile: int) -> tuple[int, int]:
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


def local_tile_coords(schedule: GroupedSchedule, expert: int, local: int) -> tuple[int, int]:
    """(m tile, n tile) of an expert's local tile: m varies fastest, so consecutive tiles share
    one [K, block_n] slice of that expert's weight while it sits in L2."""
    mt = schedule.m_tiles[expert]
    return local % mt, local // mt


def persistent_tiles(total_tiles: int, programs: int, program: int) -> list[int]:
    """Tiles a persistent program takes when each of `programs` strides over the tile space."""
    return list(range(program, total_tiles, programs))
