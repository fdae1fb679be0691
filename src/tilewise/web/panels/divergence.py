"""Divergence: both sides of a branch, run in the simulator."""

from __future__ import annotations

from typing import Any

import numpy as np

from tilewise import sim
from tilewise.sim.report import report as sim_report
from tilewise.web.params import Params
from tilewise.web.registry import panel
from tilewise.web.sim_kernels import KERNELS


@panel(
    "divergence",
    "Divergence: both sides of a branch",
    ("variant", "seed"),
)
def divergence_panel(p: Params) -> dict[str, Any]:
    """Two warps run a branchy kernel in the simulator (`tilewise.sim.launch`), one launch per warp;
    the trace gives each source line's warp instructions and active lanes."""

    variant = p.choice("variant", "data", tuple(KERNELS))
    seed = p.int("seed", 1, 0, 1_000_000)
    rng = np.random.default_rng(seed)
    # 64 values, exactly half of them positive, in random order (or sorted so each warp agrees).
    mags = rng.uniform(0.1, 2.0, 64).astype(np.float32)
    x = np.concatenate([-mags[:32], mags[32:]])
    x = np.sort(x) if variant == "sorted" else rng.permutation(x)
    kern = KERNELS[variant]
    warps = []
    source = None
    for w in range(2):
        xw = np.ascontiguousarray(x[32 * w : 32 * w + 32])
        yw = np.full(32, np.nan, dtype=np.float32)
        side = np.zeros(32, dtype=np.int32)
        tr = sim.launch(kern, 1, 32, xw, yw, side, w, hazards=False)
        totals = sim_report(tr)["totals"]
        info = tr.info
        if source is None:
            source = [
                {"line": ln, "text": info.source_lines[ln]}
                for ln in sorted(info.source_lines)
                if info.source_lines[ln].strip()
            ]
        warps.append(
            {
                "x": [float(v) for v in xw],
                "side": [int(s) for s in side],
                "lines": {str(ln): {"inst": int(v[0]), "lanes": int(v[1])} for ln, v in tr.lines.items()},
                "warp_instructions": totals["warp_instructions"],
                "lane_efficiency": totals["lane_efficiency"],
            }
        )
    return {
        "variant": variant,
        "kernel": kern.__name__ if hasattr(kern, "__name__") else str(kern),
        "source": source,
        "warps": warps,
        "warp_size": 32,
    }
