"""The sweep and calibration scripts: the sweep runs end to end on the CPU interpreter at tiny sizes, and the
committed calibration file is exactly what calibrate.py computes from the committed fixtures."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys

import pytest
from helpers import interpreting

from tilewise.advise import space
from tilewise.model import predict as M

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SWEEPS = os.path.join(ROOT, "benchmarks", "sweeps")


def _module(name):
    if SWEEPS not in sys.path:
        sys.path.insert(0, SWEEPS)
    return importlib.import_module(name)


def test_calibration_file_is_reproduced_from_the_fixtures(tmp_path):
    pytest.importorskip("numpy")
    cal = _module("calibrate")
    out = tmp_path / "h200.json"
    assert cal.main(["--quick", "--out", str(out)]) == 0
    new, old = json.loads(out.read_text()), M.calibration("h200")
    assert new["constants"] == pytest.approx(old["constants"])
    for fam, tab in old["configs"].items():
        for kind, rates in tab.items():
            assert new["configs"][fam][kind] == pytest.approx(rates), (fam, kind)


def test_gluon_calibration_file_is_reproduced_from_the_gluon_sweep(tmp_path):
    """calibrate_gluon.py on the committed Gluon sweep writes the committed rates (every config of the space)."""
    pytest.importorskip("numpy")
    cg = _module("calibrate_gluon")
    out = tmp_path / "h200_gemm_gluon.json"
    assert cg.main(["--out", str(out)]) == 0
    new, old = json.loads(out.read_text()), M.gluon_calibration("h200")
    assert new["configs"] == old["configs"] and new["medians"] == pytest.approx(old["medians"])
    assert new["held_out"]["median_abs_error"] <= 0.10


def test_gluon_sweep_family_lists_the_space_and_its_peers():
    sw = _module("sweep")
    from tilewise.advise import space

    p = {"m": 384, "n": 6144, "k": 4096, "dtype": "bf16", "layout": "nt"}
    items = sw.configs_for("gemm_gluon", p, {}, small=False)
    cfgs = [c for src, c in items if src == "space"]
    assert cfgs == space.gemm_gluon_space(384, 6144, 4096, "bf16", layout="nt")
    assert [src for src, c in items if src != "space"] == ["default", "cublas"]
    tags = [sw._tag("gemm_gluon", "space", c) for c in cfgs]
    assert "gco128x256x64_g8_st4_e2" in tags and any(t.endswith("_sk") for t in tags)
    cg = _module("calibrate_gluon")
    assert [space.gemm_gluon_tag(cg.parse_tag(t)) for t in tags] == tags  # the tag read back
    with pytest.raises(ValueError, match="_eP and _sk"):
        cg.parse_tag("gco128x256x64_g8_st4_x2")


def test_split_rule_as_written():
    """Every sweep problem's split against the rule spelled out (tests/test_advise_verdict.held_out): anchors and
    one key in four by SHA-1 calibrate, the rest is held out; about a quarter calibrates."""
    from test_advise_verdict import held_out

    problems = _module("problems")
    for fam, (make, key) in problems.FAMILIES.items():
        keys = [key(p) for p in make()]
        for k in keys:
            assert problems.split_of(k) == ("val" if held_out(k) else "cal"), k
        cal = sum(not held_out(k) for k in keys)
        assert 0.15 * len(keys) <= cal <= 0.4 * len(keys), fam
    assert len(problems.gemm_problems()) >= 150
    assert all(len(problems.FAMILIES[f][0]()) >= 30 for f in ("attention", "decode", "grouped"))


@pytest.mark.skipif(not interpreting(), reason="needs TRITON_INTERPRET=1")
def test_sweep_runs_on_the_interpreter(tmp_path):
    pytest.importorskip("torch")
    sweep = _module("sweep")
    assert sweep.main(["--out", str(tmp_path), "--small", "--limit", "1", "--shard", "0/3"]) == 0
    for fam in ("gemm", "attention", "decode", "grouped"):
        rows = [json.loads(x) for x in (tmp_path / f"{fam}.jsonl").read_text().splitlines()]
        assert rows and all("ms" in r and r["err"] <= 3e-2 for r in rows), fam
        assert {r["source"] for r in rows} >= {"space", "hand"}
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["shard"] == "0/3" and meta["triton"] and meta["command"]


@pytest.mark.skipif(not interpreting(), reason="needs TRITON_INTERPRET=1")
def test_sweep_tags_keep_only_those_space_configs(tmp_path):
    """--tags times only the space configs spelled by each family's own tag (here a decode tile); the other
    sources still run."""
    pytest.importorskip("torch")
    sweep = _module("sweep")
    problems = _module("problems")
    p = problems.FAMILIES["decode"][0]()[0]
    q = sweep.small_problem("decode", p)
    timed = [space.TAGS["decode"](c) for src, c in sweep.configs_for("decode", q, {}, True) if src == "space"]
    assert len(timed) > 1
    want = timed[-1]
    argv = ["--out", str(tmp_path), "--small", "--limit", "1", "--family", "decode", "--tags", want]
    assert sweep.main(argv) == 0
    rows = [json.loads(x) for x in (tmp_path / "decode.jsonl").read_text().splitlines()]
    assert {r["tag"] for r in rows if r["source"] == "space"} == {want}
    assert any(r["source"] == "hand" for r in rows)


def _replay():
    spec = importlib.util.spec_from_file_location(
        "replay_dispatch", os.path.join(ROOT, "benchmarks", "sweeps", "replay_dispatch.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_replay_dispatch_measures_every_problem_and_refuses_bad_input(tmp_path, capsys):
    """The dispatch's choice for each of the sweep's problems has a measured row (a config added to the space without
    its sweep rows would show up as unmeasured); a folder without the rows and an unknown tag are one line, exit 2."""
    mod = _replay()
    rows = mod.replay(os.path.join(ROOT, "tests", "data", "sweeps", "h200"))
    assert len(rows) == 152 and all(r["speedup"] for r in rows), [r["key"] for r in rows if not r["speedup"]]
    assert mod.main(["--sweep", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--sweep must be a folder with gemm.jsonl" in err and len(err.splitlines()) == 1
    assert mod.main(["--without", "gco999x128x64_g8_st4"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--without takes Gluon config tags" in err and "gco999x128x64_g8_st4" in err
