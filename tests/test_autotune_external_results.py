"""benchmarks/results/h200/autotune_external.json is what its raw GPU rows give, and says what docs/advise.md says.

The report is recomputed on the CPU from the committed raw rows (every config of each kernel's own list timed
on the H200) and compared with the committed file; the bounds are the measured figures rounded against us."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")
ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "h200" / "autotune_external.json"


def _report():
    spec = importlib.util.spec_from_file_location("autotune_report", ROOT / "benchmarks" / "autotune_report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


RAW = ROOT / "benchmarks/results/h200/autotune_external_raw"
CAL_FILE = "benchmarks/results/h200/autotune_external_raw/flaggems/flaggems_mm.h200.json"
KERNELS = ("flaggems_mm", "liger_dyt", "inductor_mm")


def test_report_reproduces_the_committed_figures(tmp_path):
    out = tmp_path / "ae.json"
    args = [str(RAW), str(RAW / "flaggems"), "--calibration", f"flaggems_mm={CAL_FILE}", "--out", str(out)]
    assert _report().main(args) == 0
    new, old = json.loads(out.read_text()), json.loads(RESULT.read_text())
    for kernel in KERNELS:
        a, b = new["meta"]["summary"][kernel], old["meta"]["summary"][kernel]
        for key in ("shapes", "top3_within_2pct", "top1_within_5pct", "builtin_top1_within_5pct"):
            assert a[key] == b[key], (kernel, key)
    for key in ("top1_ms", "builtin_top1_ms", "file_top1_ms"):
        assert [r.get(key) for r in new["rows"]] == [r.get(key) for r in old["rows"]], key


def test_figures_as_stated():
    s = json.loads(RESULT.read_text())["meta"]["summary"]
    rows = json.loads(RESULT.read_text())["rows"]
    raw = [json.loads(x) for f in (RAW / "external.jsonl", RAW / "flaggems" / "external.jsonl") for x in f.open()]
    for kernel in KERNELS:
        mine = [r for r in rows if r["kernel"] == kernel]
        assert len(mine) >= 30 and s[kernel]["shapes"] == len(mine)
        # the best time read straight from the raw GPU rows (correct outputs only)
        for r in mine:
            ms = [x["ms"] for x in raw if x.get("kernel") == kernel and x.get("shape") == r["shape"] and "ms" in x
                  and not x.get("nan") and x.get("rel_err", 1.0) <= 1e-2]  # fmt: skip
            assert r["exhaustive_best_ms"] == min(ms)
        assert s[kernel]["tune_time_ratio"] <= 0.2  # target met: 15-17% for all three
        assert s[kernel]["picks_rel_err_max"] < 1e-2  # the picks' outputs against float64
    assert s["liger_dyt"]["top3_within_2pct"] >= 0.94 and s["liger_dyt"]["top1_within_5pct"] >= 0.66
    assert s["liger_dyt"]["builtin_top1_within_5pct"] < s["liger_dyt"]["top1_within_5pct"]  # calibration helps
    assert s["inductor_mm"]["top3_within_2pct"] >= 0.63 and s["inductor_mm"]["top1_within_5pct"] >= 0.6
    fg = s["flaggems_mm"]  # FlagGems 5.0.2's mm over its 22 Hopper configs: targets missed, see docs/advise.md
    assert fg["top3_within_2pct"] >= 0.76 and fg["top1_within_5pct"] >= 0.63 and fg["tune_time_ratio"] <= 0.15
    assert fg["calibration"]["kept"] == "built-in"  # its six shapes' fit predicted the held-out one worse
    # `tilewise calibrate` run on the H200 (8 shapes of its own, 56 timings): its file's picks on the same rows
    f = fg["calibration_file"]
    assert f["file"] == CAL_FILE and f["timings"]["fit"] + f["timings"]["held_out"] >= 50
    assert f["top3_within_2pct"] >= 0.73 and f["top1_within_5pct"] >= 0.66
    assert f["held_out_error"]["median"] < f["held_out_error"]["builtin_median"]  # it fits better than built-in


def test_calibration_shapes_are_not_verdict_shapes():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import autotune_external as X
    import autotune_targets as T

    verdict = {(s["m"], s["n"], s["k"]) for s in X.gemm_shapes(X.SEED + 1, 36)}
    assert not verdict & {(s["M"], s["N"], s["K"]) for s in T.calibration_shapes()}
    cal = json.loads((ROOT / CAL_FILE).read_text())
    assert {(r["M"], r["N"], r["K"]) for r in cal and [json.loads(x)["shape"] for x in
            (ROOT / (CAL_FILE + ".partial.jsonl")).open()]} <= {(s["M"], s["N"], s["K"]) for s in T.calibration_shapes()}  # fmt: skip
    assert cal["fingerprint"] == T.FLAGGEMS_DESC.fingerprint() and cal["measured_on"] == ["NVIDIA H200"]
