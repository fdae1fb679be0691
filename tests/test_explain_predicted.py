"""`tilewise explain attention|decode|moe|ffn` show the time model's prediction (the figure
`tilewise advise` and the bench rows' model_ms give) and its binding term beside their floors and estimates."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tilewise.advise import advise
from tilewise.explain import attention, decode, ffn, moe
from tilewise.explain.report import fmt_time
from tilewise.model.predict import predict


def _said(report, key: str, ms: float) -> bool:
    return any(f"predicts {fmt_time(ms * 1e-3)}" in line for s in report.steps if s.key == key for line in s.lines)


@pytest.mark.parametrize("gpu", ["h200", "h100-sxm", "a100-sxm"])
def test_attention_shows_the_advisors_prediction(gpu):
    r = attention.explain(batch=2, heads=16, kv_heads=4, seq_q=2048, head_dim=128, causal=True, gpu=gpu)
    v = r["waves"]
    p = {"batch": 2, "heads": 16, "kv_heads": 4, "seq_q": 2048, "seq_k": 2048, "head_dim": 128, "causal": True}
    top = advise("attention", p, gpu, top_k=1)[0]
    assert v["model_ms"] == pytest.approx(top.prediction.ms) and v["model_binding"] == top.prediction.binding
    assert v["model_config"] == top.tag and v["model_calibrated"] == (gpu == "h200")
    assert v["estimate_s"] > 0  # the pipeline sketch's estimate stays beside it
    assert _said(r, "waves", v["model_ms"]) and f"({top.prediction.binding} binds;" in " ".join(r.steps[-1].lines)


def test_decode_shows_the_advisors_prediction():
    r = decode.explain(batch=4, heads=32, kv_heads=8, seq_len=16384, head_dim=128, gpu="h200")
    v = r["time"]
    top = advise("decode", {"batch": 4, "heads": 32, "kv_heads": 8, "seq_len": 16384, "head_dim": 128}, "h200", 1)[0]
    assert v["model_ms"] == pytest.approx(top.prediction.ms) and v["model_binding"] == top.prediction.binding
    assert v["model_ms"] > v["bandwidth_time_s"] * 1e3  # above the bandwidth floor
    assert _said(r, "time", v["model_ms"])


def test_decode_head_dim_the_model_does_not_cover_says_so():
    r = decode.explain(head_dim=96, gpu="h200")
    assert r["time"]["model_ms"] is None and "head_dim" in r["time"]["model_error"]
    assert any("no prediction" in line for line in r.steps[3].lines)


@pytest.mark.parametrize("heads", [None, 4])
def test_moe_shows_the_composed_prediction(heads):
    r = moe.explain(experts=64, tokens=4096, top_k=8, d_model=2048, d_ff=1024, heads=heads, gpu="h200")
    h = heads or 1
    for key in ["per_token"] + (["per_head"] if heads else []):
        v = r[key]
        hh = h if key == "per_head" else 1
        want = predict("moe", {"tokens": 4096, "d_model": 2048 // hh, "d_ff": 1024, "experts": 64 * hh, "top_k": 8,
                               "dtype": "bf16"}, {}, "h200")  # fmt: skip
        assert v["model_ms"] == pytest.approx(want.ms) and v["model_binding"] == want.binding
        assert set(v["model_terms"]) == {"gate_up_gemm", "down_gemm", "routing", "topk_sum"}
        assert _said(r, key, v["model_ms"])


def test_ffn_shows_forward_and_step_predictions():
    r = ffn.explain(tokens=16384, d_model=2048, heads=16, intermediate=512, gpu="h200")
    v = r["prediction"]
    p = {"tokens": 16384, "heads": 16, "head_dim": 128, "intermediate": 512, "dtype": "bf16"}
    fwd, step = predict("ffn", p, {}, "h200"), predict("ffn", {**p, "backward": "split"}, {}, "h200")
    assert v["model_ms"] == pytest.approx(fwd.ms) and v["step_model_ms"] == pytest.approx(step.ms)
    assert v["model_ms"] > v["fused_forward_s"] * 1e3 and v["step_model_binding"] == step.binding
    assert _said(r, "prediction", fwd.ms) and _said(r, "prediction", step.ms)


def test_json_output_carries_the_prediction():
    out = subprocess.run(
        [sys.executable, "-m", "tilewise.cli", "explain", "decode", "--gpu", "h200", "--json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    d = json.loads(out.stdout)
    assert d["time"]["model_ms"] > 0 and d["time"]["model_binding"] == "hbm"
