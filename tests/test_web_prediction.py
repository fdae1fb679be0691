"""The explorer shows the time model's prediction where it showed the roofline floor: the H200
GEMM rows beside `tilewise.model.predict` of the config each row ran (computed when asked, not stored with the
committed rows, which were measured before the model existed) and the floor, and the decode panel's point beside
the advisor's top-1 for that GEMM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tilewise.advise import advise, space
from tilewise.model.predict import predict
from tilewise.web import api

ROOT = Path(__file__).resolve().parents[1]


def test_config_tags_parse_back_to_the_grids_configs():
    for c in space.gemm_grid():
        assert space.gemm_config_from_tag(space.gemm_tag(c)) == c
    assert space.gemm_config_from_tag("BLOCK_M=64 BLOCK_N=64") is None


def test_hierarchy_rows_carry_the_prediction_of_the_config_that_ran():
    bench = json.loads((ROOT / "benchmarks/results/h200/gemm.json").read_text())
    by_shape = {r["shape"]: r for r in bench["rows"] if r["dtype"] == "bf16"}
    (m,) = api.call("hierarchy", {"gpu": "h200"})["measured"]
    r = by_shape[m["shape"]]
    M, N, K = (int(x) for x in r["shape"].split("x"))
    want = predict("gemm", {"m": M, "n": N, "k": K, "dtype": "bf16", "layout": "nn"},
                   space.gemm_config_from_tag(r["config"]), "h200")  # fmt: skip
    assert m["model_ms"] == pytest.approx(want.ms) and m["model_binding"] == want.binding
    assert m["floor_ms"] == pytest.approx(r["predicted_ms"]) and m["floor_bound"] == r["predicted_bound"]
    assert m["measured_over_model"] == pytest.approx(r["ours_ms"] / want.ms)
    assert m["model_ms"] > m["floor_ms"]  # the prediction sits above the floor
    assert r.get("model_ms") in (None, pytest.approx(want.ms))  # a row measured with the model column agrees


def test_decode_rows_and_point_carry_the_prediction():
    d = api.call("decode", {"gpu": "h200", "batch": "64"})
    for x in d["measured"]:
        assert x["model_ms"] > x["floor_ms"] > 0 and x["model_binding"]
    top = advise("gemm", {"m": 64, "n": 24576, "k": 8192, "dtype": "bf16"}, "h200", top_k=1)[0]
    p = d["predicted"]
    assert p["model_ms"] == pytest.approx(top.prediction.ms) and p["config"] == top.tag
    assert p["model_binding"] == top.prediction.binding and p["calibrated"] is True
    assert p["floor_ms"] == pytest.approx(d["current"]["time_s"] * 1e3)
    other = api.call("decode", {"gpu": "a100-sxm", "batch": "64"})["predicted"]
    assert other["calibrated"] is False and other["model_ms"] > 0  # datasheet-only, and said so


def test_grouped_tags_read_back():
    for c in space.grouped_space(64, 512, 512, "bf16", "h200"):
        back = space.grouped_config_from_tag(space.grouped_tag(c))
        assert back == {k: c[k] for k in back} and back["schedule"] == c["schedule"]
    assert space.grouped_config_from_tag("128x128x64_g8_s1_w4_st3") is None
