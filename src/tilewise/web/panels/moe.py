"""MoE: the persistent grouped GEMM's tile scheduler (`model.waves`)."""

from __future__ import annotations

from typing import Any

from tilewise.errors import InputError
from tilewise.model import waves
from tilewise.web.params import Params
from tilewise.web.registry import gpu_summary, panel

# The page draws every tile it is given.
MAX_DRAWN_TILES = 2048


@panel(
    "moe",
    "MoE: the persistent grouped GEMM's tile scheduler",
    ("gpu", "rows", "block_m", "n", "block_n", "programs", "k"),
)
def moe(p: Params) -> dict[str, Any]:
    """Per-expert tiles, their prefix sum, tile -> (expert, local tile) by binary search, and
    which persistent program takes which tile: `model.waves`'s grouped-GEMM functions."""

    g = p.gpu()
    rows = p.int_list("rows", [40, 0, 130, 64, 7, 200, 90, 16], 0, 1 << 16, 64)
    block_m = p.int("block_m", 64, 16, 256)
    n = p.int("n", 512, 1, 1 << 16)
    block_n = p.int("block_n", 128, 16, 256)
    programs = p.int("programs", g.sms, 1, 1024)
    k = p.int("k", 2048, 16, 1 << 16)
    s = waves.grouped_schedule(rows, block_m, n, block_n)
    if s.total_tiles > MAX_DRAWN_TILES:
        raise InputError(
            f"the schedule must have at most {MAX_DRAWN_TILES} tiles to be drawn, got {s.total_tiles} "
            "(fewer rows, larger block_m or block_n)"
        )
    tiles = []
    for prog in range(min(programs, s.total_tiles)):
        for rnd, t in enumerate(waves.persistent_tiles(s.total_tiles, programs, prog)):
            e, local = waves.tile_owner(s.prefix, t)
            mt, nt = waves.local_tile_coords(s, e, local)
            tiles.append(
                {"tile": t, "expert": e, "local": local, "m_tile": mt, "n_tile": nt, "program": prog, "round": rnd}
            )
    tiles.sort(key=lambda d: d["tile"])
    busy = min(programs, s.total_tiles)
    rounds = max((d["round"] for d in tiles), default=-1) + 1
    cost = None
    if s.total_tiles:
        c = waves.grouped_gemm_cost(rows, k, n, block_m, block_n, 64, "bf16", g)
        cost = {
            "k": k,
            "tile": c.tile.to_dict(),
            "m_fill": c.m_fill,
            "wgmma_fill": c.wgmma_fill,
            "cycles_persistent": c.cycles_persistent,
            "cycles_per_launch": c.cycles_per_launch,
            "overhead_share_persistent": c.overhead_share_persistent,
            "overhead_share_per_launch": c.overhead_share_per_launch,
            "persistent": c.persistent.to_dict(),
        }
    return {
        "gpu": gpu_summary(g),
        "schedule": s.to_dict(),
        "cost": cost,
        "programs": programs,
        "busy_programs": busy,
        "idle_programs": programs - busy,
        "rounds": rounds,
        "tiles": tiles,
    }
