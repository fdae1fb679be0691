"""Three pipeline designs on one SM (`model.pipeline`)."""

from __future__ import annotations

import re
from typing import Any

from tilewise.model import pipeline
from tilewise.web import measured
from tilewise.web.params import Params
from tilewise.web.registry import gpu_summary, panel


@panel(
    "pipeline",
    "Compare three designs",
    ("gpu", "head_dim", "n", "hit", "stages", "tiles"),
)
def pipeline_panel(p: Params) -> dict[str, Any]:
    """`model.pipeline.compare` on per-tile times from `attention_tile_times`: each design's
    discrete-event timeline (the events to draw) and the Tensor Cores' utilisation."""

    g = p.gpu()
    d = p.int("head_dim", 128, 32, 256)
    n = p.int("n", 128, 16, 256)
    hit = p.float("hit", 0.9, 0.0, 0.99)
    stages = p.int("stages", 2, 1, 8)
    tiles = p.int("tiles", 6, 1, 32)
    times = pipeline.attention_tile_times(d, n, 64, "bf16", hit, g)
    timelines = pipeline.compare(tiles, times.load, times.mma, times.softmax, stages)
    return {
        "gpu": gpu_summary(g),
        "times": times.to_dict(),
        # The model names design (b) for any S; the page shows the S it ran.
        # `design_letter` is the (a)/(b)/(c) the titles and the measured rows use.
        "designs": [
            {**t.to_dict(), "title": t.title.replace("S-stage", f"{stages}-stage"), "design_letter": letter}
            for letter, t in zip("abc", timelines.values())
        ],
        # The designs measured as kernels on the H200 (the FA3 work's rows), each beside the kernel model's
        # utilisation for its shape today (`predict_kernel_designs`, which the rows' own figure came from).
        "measured": _measured_designs() if g.key == measured.MEASURED_GPU else [],
    }


def _measured_designs() -> list[dict[str, Any]]:
    out = []
    for r in measured.design_rows():
        shape = re.search(r"S(\d+) D(\d+)", r["shape"])
        if shape is None:
            raise ValueError(f"the designs row {r['row']} of {r['file']} must name S and D, got {r['shape']!r}")
        s, d = int(shape[1]), int(shape[2])
        model = pipeline.predict_kernel_designs(seq_q=s, seq_k=s, head_dim=d)[r["design_name"]]
        out.append({**r, "model_utilization_now": model.tensor_utilisation})
    return out
