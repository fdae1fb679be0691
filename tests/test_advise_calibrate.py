"""tilewise.advise.calibrate: the fit recovers known rates from timings made with them; bad input is one line.

The synthetic timings are the model's own predictions at chosen rates (on the fit's grids), with a
few percent of deterministic noise, so the rates that made them are the independent reference."""

from __future__ import annotations

import json
import math
import random

import pytest

from tilewise.advise import calibrate as C
from tilewise.advise.autotune import load_calibration, prune_configs_by
from tilewise.advise.kernel import describe, predict_ms
from tilewise.cli import main
from tilewise.errors import InputError

DESC = describe("gemm", name="synthetic_mm")
TILES = [(bm, bn, bk, w, st) for bm, bn, bk, w in ((64, 64, 64, 4), (128, 128, 64, 8), (128, 256, 64, 8),
         (16, 128, 128, 4), (64, 128, 64, 4)) for st in (3, 4)]  # fmt: skip
SHAPES = [{"M": m, "N": n, "K": k, "dtype": "fp16", "layout": "nn"}
          for m, n, k in ((1, 4096, 4096), (4096, 4096, 4096), (64, 8192, 4096), (2048, 2048, 512),
                          (8192, 1024, 1024), (16, 4096, 14336), (1024, 11008, 4096), (3000, 3000, 3000))]  # fmt: skip


def _cfg(t):
    bm, bn, bk, w, st = t
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "num_warps": w,
            "num_stages": st}  # fmt: skip


def _rows(rates, noise=0.0, gpu="NVIDIA H200", kernel="synthetic_mm"):
    r = random.Random(7)
    out = []
    for ci, si in C.design(len(TILES), len(SHAPES)):
        cfg, s = _cfg(TILES[ci]), SHAPES[si]
        ms = predict_ms(DESC, s, cfg, rates) * math.exp(r.uniform(-noise, noise))
        out.append({"kernel": kernel, "gpu": gpu, "config": cfg, "shape": s, "ms": ms})
    return out


@pytest.mark.parametrize("truth", [{"mma": C.MMA[3], "stream": C.STREAM[8], "fixed": 2.0},
                                   {"mma": C.MMA[9], "stream": C.STREAM[4], "fixed": 0.5}])  # fmt: skip
def test_fit_recovers_the_rates_that_made_the_timings(truth):
    cal = C.fit(DESC, _rows(truth))
    assert cal["rates"]["mma"] == pytest.approx(truth["mma"])
    assert cal["held_out_error"]["median"] < 0.01
    # with 3% noise the rates land within one grid step and the held-out error stays at the noise
    noisy = C.fit(DESC, _rows(truth, noise=0.03))
    assert abs(math.log(noisy["rates"]["mma"] / truth["mma"])) <= math.log(10) / 11 + 1e-9
    assert noisy["held_out_error"]["median"] < 0.05


def test_the_pruner_keeps_the_built_in_rates_where_the_fit_does_not_beat_them(tmp_path):
    """Timings made by the built-in rates themselves: no fitted set (on the grids) predicts the held-out shape
    better, so the file says so and the pruner's times are the uncalibrated ones."""
    r = random.Random(3)
    rows = [{**row, "ms": predict_ms(DESC, row["shape"], row["config"], None) * math.exp(r.uniform(-0.01, 0.01))}
            for row in _rows(None)]  # fmt: skip
    cal = C.fit(DESC, rows)
    assert cal["kept"] == "built-in"
    assert cal["held_out_error"]["median"] >= cal["held_out_error"]["builtin_median"]
    path = tmp_path / "cal.json"
    C.write(cal, str(path))
    pm = prune_configs_by(DESC, calibration=str(path))["perf_model"]
    s = SHAPES[2]
    named = {"M": s["M"], "N": s["N"], "K": s["K"], "dtype": "fp16", "layout": "nn"}
    fitted = predict_ms(DESC, named, _cfg(TILES[0]), cal["rates"])
    assert pm(**named, **_cfg(TILES[0])) == pytest.approx(predict_ms(DESC, named, _cfg(TILES[0]), None))
    assert pm(**named, **_cfg(TILES[0])) != pytest.approx(fitted)  # the fit itself would have differed
    assert C.fit(DESC, _rows({"mma": C.MMA[3], "stream": C.STREAM[8], "fixed": 2.0}))["kept"] == "fitted"


def test_design_times_every_config_on_two_shapes_and_holds_shapes_out():
    pairs = C.design(10, 8)
    for c in range(10):
        assert len({s for ci, s in pairs if ci == c}) >= 2
    assert {s for _c, s in pairs} >= {3, 7}  # the held-out shapes are timed too


def test_calibration_file_round_trip_and_the_pruner_loads_it(tmp_path):
    cal = C.fit(DESC, _rows({"mma": C.MMA[3], "stream": C.STREAM[8], "fixed": 2.0}))
    path = tmp_path / "cal.json"
    C.write(cal, str(path))
    assert load_calibration(str(path), DESC)["rates"] == cal["rates"]
    pm = prune_configs_by(DESC, calibration=str(path))["perf_model"]
    s = SHAPES[1]
    named = {"M": s["M"], "N": s["N"], "K": s["K"], "dtype": "fp16", "layout": "nn"}
    assert pm(**named, **_cfg(TILES[1])) == pytest.approx(predict_ms(DESC, named, _cfg(TILES[1]), cal["rates"]))


def _write(tmp_path, data) -> str:
    p = tmp_path / "c.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(p)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda tp: C.fit(DESC, _rows({"mma": 0.5})[:5]), "at least 8 timings"),
        (lambda tp: C.fit(DESC, _rows({"mma": 0.5}, gpu="NVIDIA H100 80GB HBM3")), "got timings from NVIDIA H100"),
        (lambda tp: C.fit(DESC, _rows({"mma": 0.5}, kernel="other")), "timings must be of kernel"),
        (lambda tp: load_calibration(str(tp / "nope.json"), DESC), "must exist"),
        (lambda tp: load_calibration(_write(tp, "{not json"), DESC), "must be JSON"),
        (lambda tp: load_calibration(_write(tp, [1, 2]), DESC), "must have format"),
        (lambda tp: load_calibration(_write(tp, {**C.fit(DESC, _rows({"mma": 0.5})), "kernel": "x"}), DESC),
         "is for kernel 'x'"),
        (lambda tp: prune_configs_by(describe("gemm", name="other"),
                                     calibration=_write(tp, C.fit(DESC, _rows({"mma": 0.5})))), "is for kernel"),
        (lambda tp: load_calibration(_write(tp, {**C.fit(DESC, _rows({"mma": 0.5})), "kept": "both"}), DESC),
         "kept must be one of fitted, built-in, got 'both'"),
        (lambda tp: C.read_rows(_write(tp, '{"ms": -1}\n')), "line 1 must be a JSON row"),
        (lambda tp: C.load_tunable("no_colon"), "MODULE:NAME"),
    ],
)  # fmt: skip
def test_bad_calibration_input_is_one_line(tmp_path, make, match):
    with pytest.raises(InputError, match=match) as e:
        make(tmp_path)
    assert "\n" not in str(e.value)


def test_cli_fits_from_timings_and_exits_2_on_bad_input(tmp_path, capsys):
    mod = tmp_path / "mykern.py"
    mod.write_text(
        "from tilewise.advise.calibrate import Tunable\nfrom tilewise.advise.kernel import describe\n"
        "TUNABLE = Tunable(describe('gemm', name='synthetic_mm'), None, [], [], None)\n"
    )
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in _rows({"mma": C.MMA[3], "stream": 1.0, "fixed": 1.0})))
    out = tmp_path / "cal.json"
    assert main(["calibrate", f"{mod}:TUNABLE", "--timings", str(rows), "--out", str(out)]) == 0
    assert "held-out error" in capsys.readouterr().out
    assert json.loads(out.read_text())["rates"]["mma"] == pytest.approx(C.MMA[3])
    assert main(["calibrate", f"{mod}:MISSING", "--timings", str(rows), "--out", str(out)]) == 2
    assert main(["calibrate", f"{mod}:TUNABLE", "--timings", str(tmp_path / "none"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("tilewise: error:") for line in err)
