"""`model.pipeline.persistent_forward_ms` (the Gluon forward's time model) against the committed H200 sweep rows.

The model takes the busiest CTA of the kernel's own schedule (`attention_gluon.busiest_cta`); its three constants
were fitted on the sweep's fp16 rows, so the bf16 rows are the held-out check. Bounds: the measured figures
rounded against us (docs/attention-hopper.md states them).
"""

from __future__ import annotations

import json
import os
import statistics

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels import attention_gluon as ag  # noqa: E402
from tilewise.model import pipeline  # noqa: E402

ROWS = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "results", "h200", "attention_sweep.json")


def _model_ms(r):
    b, h, s, d, causal, dt = r["batch"], r["heads"], r["seq"], r["head_dim"], r["causal"], r["dtype"]
    cfg, kt, nt = ag.problem_busiest(b * h, s, d, causal, dt, 132, h // r["kv_heads"])
    return pipeline.persistent_forward_ms(kt, nt, s, d, cfg.block_n, cfg.stages, dt, "h200", cfg.consumers)


def test_forward_model_on_the_sweep():
    rows = [r for r in json.load(open(ROWS))["rows"] if r["head_dim"] in (128, 256)]
    err = {dt: sorted(abs(_model_ms(r) / r["committed_graph_ms"] - 1) for r in rows if r["dtype"] == dt)
           for dt in ("fp16", "bf16")}  # fmt: skip
    assert len(err["fp16"]) == 24 and len(err["bf16"]) == 34
    # the dispatch's own column, two runs of the same kernels and predictions: at 264c495 fp16 2.1% (p90 13.6%),
    # bf16 held out 5.1% (p90 10.0%); at b1b10b3 fp16 3.8% (p90 11.7%), bf16 5.1% (p90 10.5%). The bounds take the
    # worse of the two plus the runs' spread: the rates were fitted on one run, the next one moved 1.7 points.
    # At fab798c / 2d6c5a7 (the 16-byte O store; D 128 on 2 stages) the constants were kept: bf16 5.7% / 5.2%
    # (p90 17.8% / 18.4%). The p90 grew on the short D 128 rows (S 512 / 1k, +12-28%): a CTA tile's fixed work is
    # now less than FORWARD_TILE_FIXED's 3 periods there; refitting it waits for the next re-measure
    assert statistics.median(err["fp16"]) <= 0.045 and err["fp16"][int(0.9 * 23)] <= 0.14
    assert statistics.median(err["bf16"]) <= 0.06 and err["bf16"][int(0.9 * 33)] <= 0.19


def test_forward_model_rules():
    one = pipeline.persistent_forward_ms(256, 8, 16384, 128, 128, 3)
    assert pipeline.persistent_forward_ms(512, 16, 16384, 128, 128, 3) == pytest.approx(2 * one)
    # a CTA tile's fixed work: FORWARD_TILE_FIXED periods on top of its key tiles
    more = pipeline.persistent_forward_ms(256, 9, 16384, 128, 128, 3)
    assert (more - one) / (one / (256 + 8 * pipeline.FORWARD_TILE_FIXED)) == pytest.approx(pipeline.FORWARD_TILE_FIXED)
    # D 256 on 64-key tiles: a period per key tile at least half of D 128's on 128-key tiles (half the keys, twice D)
    assert pipeline.persistent_forward_ms(256, 8, 16384, 256, 64, 2) > 0.5 * one
    with pytest.raises(InputError, match="busiest_key_tiles"):
        pipeline.persistent_forward_ms(-1, 8, 16384)
