"""Latency hiding: warps in flight against latency (`model.latency`)."""

from __future__ import annotations

from typing import Any

from tilewise.errors import InputError
from tilewise.model import latency
from tilewise.web.params import Params
from tilewise.web.registry import gpu_summary, panel


@panel(
    "latency",
    "Latency hiding: try it",
    ("gpu", "kind", "latency", "width", "ilp", "threads", "registers", "stages", "stage_kb"),
)
def latency_panel(p: Params) -> dict[str, Any]:
    """`model.latency.warps_to_hide_memory` / `warps_to_hide_issue` with the resident warps from
    occupancy, the same over block sizes, and `async_in_flight` for Hopper's one-block-per-SM way."""

    g = p.gpu()
    kind = p.choice("kind", "memory", ("memory", "issue"))
    default_latency = latency.LATENCY_CYCLES["hbm" if kind == "memory" else "fma"]
    lat = p.int("latency", default_latency, 1, 5000)
    width = p.choice("width", "16", ("4", "8", "16"))
    ilp = p.int("ilp", 1, 1, 8)
    threads = p.int("threads", 256, 32, g.max_threads_per_block)
    registers = p.int("registers", 32, 0, g.max_regs_per_thread)
    stages = p.int("stages", 4, 1, 16)
    stage_kb = p.int("stage_kb", 32, 1, 227)

    def run(t: int) -> latency.LatencyHiding:
        if kind == "memory":
            return latency.warps_to_hide_memory(lat, int(width), ilp, g, t, registers)
        return latency.warps_to_hide_issue(lat, 1.0, ilp, g, t, registers)

    cur = run(threads)
    curve = []
    for t in range(32, g.max_threads_per_block + 1, 32):
        try:
            r = run(t)
        except InputError:
            continue
        curve.append({"threads": t, "resident_warps": r.resident_warps, "hidden_fraction": r.hidden_fraction})
    return {
        "gpu": gpu_summary(g),
        "kind": kind,
        "current": cur.to_dict(),
        "curve": curve,
        "async": latency.async_in_flight(stages, stage_kb * 1024, lat if kind == "memory" else default_latency, g),
        "latency_defaults": latency.LATENCY_CYCLES,
    }
