"""The decode GEMM's grid (C[64, 24576], 64 x 128 tiles) laid over the SMs, wave by wave, and one block cut into warps."""

from __future__ import annotations

from typing import Any

from tilewise import gpus
from tilewise.errors import InputError
from tilewise.explain.gemm import explain
from tilewise.model import waves
from tilewise.web import measured
from tilewise.web.params import Params
from tilewise.web.registry import gpu_summary, panel

# The page draws every block it is given.
MAX_DRAWN_BLOCKS = 4096


@panel(
    "hierarchy",
    "Grid → blocks → SMs → warps",
    ("gpu", "m", "n", "k", "tile_m", "tile_n", "threads"),
)
def hierarchy(p: Params) -> dict[str, Any]:
    """A GEMM's grid laid over the SMs, wave by wave, and one block cut into warps.

    Counts come from `explain.gemm.explain` (grid, warps, tiles, K steps) and
    `model.waves.grid_waves`; which SM runs which block comes from
    `model.waves.persistent_tiles`: with equal blocks, the scheduler's "whichever SM has
    room gets the next block" hands block b to slot b mod slots in round b div slots,
    the same stride a persistent program walks.
    """

    g = p.gpu()
    m = p.int("m", 64, 1, 1 << 20)
    n = p.int("n", 24576, 1, 1 << 20)
    k = p.int("k", 8192, 1, 1 << 20)
    tile_m = p.int("tile_m", 64, 16, 256)
    tile_n = p.int("tile_n", 128, 16, 256)
    threads = p.int("threads", 256, 32, g.max_threads_per_block)
    rep = explain(m=m, n=n, k=k, gpu=g.key, tile=(tile_m, tile_n), threads=threads)
    tiling, block, w = rep["tiling"], rep["block"], rep["waves"]
    blocks = tiling["blocks"]
    if blocks > MAX_DRAWN_BLOCKS:
        grid_m, grid_n = tiling["grid"]
        raise InputError(
            f"the grid must have at most {MAX_DRAWN_BLOCKS} blocks to be drawn, got {grid_m} x {grid_n} = "
            f"{blocks} (use larger tiles or a smaller problem)"
        )
    wv = waves.grid_waves(blocks, g.sms, 1)
    # schedule[s] = the blocks SM s runs, in order; block b's wave is its index there.
    schedule = [waves.persistent_tiles(blocks, wv.slots, s) for s in range(wv.slots)]
    wave_of = [0] * blocks
    sm_of = [0] * blocks
    for s, bs in enumerate(schedule):
        for i, b in enumerate(bs):
            wave_of[b], sm_of[b] = i, s
    busy_per_wave = [sum(1 for bs in schedule if len(bs) > r) for r in range(wv.rounds)]
    return {
        # The same tiles' K steps dealt out by stream-K (model.waves.stream_k_split), beside the waves above.
        "stream_k": waves.stream_k_summary(tiling["grid"][0], tiling["grid"][1], block["k_steps"], g.sms),
        "gpu": gpu_summary(g),
        "problem": {"m": m, "n": n, "k": k, "tile": [tile_m, tile_n], "threads": threads},
        "grid": tiling["grid"],
        "blocks": blocks,
        "waves": wv.to_dict(),
        "schedule": schedule,
        "wave_of_block": wave_of,
        "sm_of_block": sm_of,
        "busy_sms_per_wave": busy_per_wave,
        "warps_per_block": block["warps"],
        "warp_size": g.warp_size,
        "threads": block["threads"],
        "a_tile_bytes": block["a_tile_bytes"],
        "b_tile_bytes": block["b_tile_bytes"],
        "k_steps": block["k_steps"],
        "sub_partitions": g.sub_partitions,
        "explain": {s.key: s.lines for s in rep.steps if s.key in ("tiling", "waves", "block", "mma", "roofline")},
        "tail_efficiency": w["tail_efficiency"],
        "mma": rep["mma"],
        "memory": [
            {
                "level": "HBM",
                "capacity_bytes": g.memory_bytes,
                "bytes_per_s": gpus.bandwidth(g, "hbm"),
                "balance": gpus.balance(g, "hbm", "bf16"),
                "holds": "all the weights and activations",
            },
            {
                "level": "L2",
                "capacity_bytes": g.l2_bytes,
                "bytes_per_s": gpus.bandwidth(g, "l2"),
                "balance": gpus.balance(g, "l2", "bf16"),
                "holds": "re-read tiles (a model bandwidth: none is published)",
            },
            {
                "level": "shared memory (SRAM)",
                "capacity_bytes": g.smem_per_sm,
                "per_sm": True,
                "bytes_per_s": gpus.bandwidth(g, "smem"),
                "balance": gpus.balance(g, "smem", "bf16"),
                "holds": "the A and B tiles of a K step",
            },
            {
                "level": "registers",
                "capacity_bytes": g.regs_per_sm * 4,
                "per_sm": True,
                "bytes_per_s": None,
                "balance": None,
                "holds": "fragments and the accumulator",
            },
        ],
        "peak_flops_bf16": gpus.peak_flops(g, "bf16"),
        # The same GEMM measured on the H200 (benchmarks/results/h200/gemm*.json), beside the roofline.
        "measured": measured.gemm_beside_model(g, m, n, k, "bf16"),
        # The read-bandwidth probe behind the L2 figure above, over working-set sizes (H200 only).
        "l2_probe": measured.l2_probe(g),
    }
