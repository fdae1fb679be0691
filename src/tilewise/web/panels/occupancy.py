"""Occupancy: the four limits, the tightest wins (`model.occupancy`)."""

from __future__ import annotations

from typing import Any

from tilewise.model.occupancy import occupancy, what_if
from tilewise.web import measured
from tilewise.web.params import Params
from tilewise.web.registry import gpu_summary, panel


@panel(
    "occupancy",
    "Occupancy: four limits, the tightest wins",
    ("gpu", "threads", "registers", "smem", "carveout", "barriers"),
)
def occupancy_panel(p: Params) -> dict[str, Any]:
    """`model.occupancy.occupancy` for one configuration, and the calculator's what-if curves."""

    g = p.gpu()
    threads = p.int("threads", 256, 1, g.max_threads_per_block)
    registers = p.int("registers", 64, 0, g.max_regs_per_thread)
    smem = p.size("smem", 0, 0, g.smem_per_block_optin)
    carveout = p.int("carveout", -1, -1, 100)
    barriers = p.int("barriers", 1, 0, g.max_barriers_per_block)
    kw: dict[str, Any] = dict(
        gpu=g,
        threads=threads,
        registers=registers,
        static_smem=0,
        dynamic_smem=smem,
        carveout=None if carveout < 0 else carveout,
        barriers=barriers,
    )
    o = occupancy(**kw)
    return {
        "gpu": gpu_summary(g),
        "result": o.to_dict(),
        "hardware": {
            "max_warps_per_sm": g.max_warps_per_sm,
            "max_blocks_per_sm": g.max_blocks_per_sm,
            "regs_per_sm": g.regs_per_sm,
            "max_regs_per_thread": g.max_regs_per_thread,
            "smem_per_sm": g.smem_per_sm,
            "smem_per_block_optin": g.smem_per_block_optin,
            "smem_per_block_default": g.smem_per_block_default,
            "max_threads_per_block": g.max_threads_per_block,
        },
        "what_if": what_if(kw),
        # The CUDA runtime's answer for the same configuration, where the H200 fixture recorded it
        # (static shared memory 0 and one barrier, as the panel asks).
        "measured": measured.occupancy(g.key, registers, threads, smem, kw["carveout"]) if barriers == 1 else None,
    }
