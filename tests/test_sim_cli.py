"""`tilewise trace`: the per-line report, text and JSON, and its errors."""

import argparse
import json
import os

import pytest

from tilewise.errors import InputError
from tilewise.sim import cli

EX = os.path.join(os.path.dirname(__file__), "..", "examples", "sim")


def _run(argv, capsys):
    p = argparse.ArgumentParser(prog="tilewise")
    sub = p.add_subparsers(dest="command")
    cli.register(sub)
    a = p.parse_args(argv)
    rc = a.func(a)
    return rc, capsys.readouterr().out


def test_trace_tiled_gemm_reproduces_the_seed(capsys):
    rc, out = _run(["trace", os.path.join(EX, "gemm_tiled.py"), "--grid", "2,1", "--block", "32,32", "--json"], capsys)
    assert rc == 0
    r = json.loads(out)
    by = {x["access"]: x for x in r["lines"]}
    a, b = by["A[row * K + t + tx]"], by["B[(t + ty) * N + col]"]
    for x in (a, b):  # coalesced: 4 sectors per request, the ideal
        assert x["sectors_per_request"] == 4.0 and x["sectors"] == x["ideal_sectors"]
    sa, sb = by["sA[ty][k]"], by["sB[k][tx]"]
    assert sa["broadcasts"] == sa["inst"] and sa["bank_conflicts"] == 0  # a broadcast
    assert sb["wavefronts_per_inst"] == 1.0 and sb["bank_conflicts"] == 0 and sb["banks_per_inst"] == 32
    assert r["hazards"] == []
    assert r["check"]["max_abs_error_vs_numpy"] < 1e-3
    assert r["blocks_simulated"] == 2


def test_trace_text_and_sample(capsys):
    rc, out = _run(["trace", os.path.join(EX, "transpose.py"), "--kernel", "transpose_naive", "--sample", "2"], capsys)
    assert rc == 0
    assert "32.0-way bank conflict" in out
    assert "simulated 2 of 16 blocks" in out


def test_trace_reports_hazards(capsys):
    rc, out = _run(["trace", os.path.join(EX, "gemm_tiled_no_second_barrier.py"), "--grid", "1,1"], capsys)
    assert "WAR: write-after-read" in out


def test_trace_errors(capsys):
    with pytest.raises(InputError, match="--grid"):
        _run(["trace", os.path.join(EX, "gemm_tiled.py"), "--grid", "a,b"], capsys)
    with pytest.raises(InputError, match="not found"):
        _run(["trace", "nope.py"], capsys)
    with pytest.raises(InputError, match="--kernel"):
        _run(["trace", os.path.join(EX, "transpose.py"), "--kernel", "nope"], capsys)
    with pytest.raises(InputError, match="--block 256"):
        _run(["trace", os.path.join(EX, "block_sum.py"), "--block", "128"], capsys)
