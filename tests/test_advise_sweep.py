"""The sweep and calibration scripts: the sweep runs end to end on the CPU interpreter at tiny sizes, and the
committed calibration file is exactly what calibrate.py computes from the committed fixtures."""

from __future__ import annotations

import importlib
import json
import os
import sys

import pytest

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


def test_split_rule_is_the_validators():
    problems = _module("problems")
    from tilewise.advise import validate

    for fam, (make, key) in problems.FAMILIES.items():
        for p in make():
            assert problems.split_of(key(p)) == validate.split_of(key(p))
    assert len(problems.gemm_problems()) >= 150
    assert all(len(problems.FAMILIES[f][0]()) >= 30 for f in ("attention", "decode", "grouped"))


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET", "0") in ("", "0"), reason="needs TRITON_INTERPRET=1")
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
