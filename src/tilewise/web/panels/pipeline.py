"""Three pipeline designs on one SM (`model.pipeline`)."""

from __future__ import annotations

from tilewise.model import pipeline
from tilewise.web import measured
from tilewise.web.params import Params
from tilewise.web.registry import gpu_summary, panel


@panel(
    "pipeline",
    "Compare three designs",
    ("gpu", "head_dim", "n", "hit", "stages", "tiles"),
)
def pipeline_panel(p: Params) -> dict:
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
        # The designs measured as kernels on the H200, once committed (the FA3 work writes them).
        "measured": measured.design_rows(),
    }
