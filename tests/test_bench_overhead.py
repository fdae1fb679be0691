"""`tilewise bench overhead`: the timing loop and the rows, on the CPU with stand-in ops (no GPU)."""

from __future__ import annotations

import argparse
import time

import pytest

from tilewise.bench.suites import overhead
from tilewise.errors import InputError


def _sleeper(us: float, log: list, tag: str):
    def f():
        log.append(tag)
        t = time.perf_counter() + us * 1e-6
        while time.perf_counter() < t:
            pass

    return f


def test_per_call_us_measures_the_call_and_syncs_once_around():
    syncs = []
    us = overhead.per_call_us(_sleeper(200, [], "x"), 50, sync=lambda: syncs.append(1))
    assert 190 <= us <= 2000  # busy-wait of 200 us per call, plus loop overhead on a loaded machine
    assert len(syncs) == 2


def test_alternate_runs_ours_and_peer_round_by_round():
    log: list = []
    t = overhead.alternate(_sleeper(50, log, "o"), _sleeper(300, log, "p"), calls=10, rounds=3, sync=lambda: None)
    timed = log[40:]  # after 20 warm-up calls of each
    assert timed == (["o"] * 10 + ["p"] * 10) * 3
    assert t["ours_us"] < t["peer_us"]
    assert t["ours_min_us"] <= t["ours_us"] <= t["ours_max_us"]


def test_rows_name_the_host_and_the_target():
    log: list = []
    cases = {
        "matmul": ("64x64x64", "bf16", _sleeper(30, log, "o"), "torch.matmul", _sleeper(25, log, "p")),
        "sum": ("65536", "fp32", _sleeper(60, log, "o"), "torch.sum", _sleeper(20, log, "p")),
        "empty": ("1 program", "-", _sleeper(10, log, "o"), "compiled kernel launch", _sleeper(5, log, "p")),
    }
    tags = {"gpu": "cpu", "cpu": "Test CPU 9000", "date": "2026-12-01", "torch": "x", "triton": "y", "command": "c"}
    args = argparse.Namespace(ops="matmul,sum,empty", calls=20, rounds=3)
    torch = pytest.importorskip("torch")
    rows = overhead._overhead_rows(args, torch, None, tags, lambda it, **k: it, cases=cases, sync=lambda: None)
    assert [r["kernel"] for r in rows] == ["matmul", "sum", "triton launch"]
    for r in rows:
        assert r["cpu"] == "Test CPU 9000" and r["date"] and r["command"]
        assert r["extra_us"] == pytest.approx(r["ours_us"] - r["peer_us"])
    assert rows[0]["within_target"] is True  # ~5 us over the peer
    assert rows[1]["within_target"] is False  # ~40 us over
    assert rows[2]["within_target"] is None  # a reference row, no target


def test_bad_op_list_is_refused():
    with pytest.raises(InputError, match="--ops"):
        overhead.parse_ops("matmul,nope")
    with pytest.raises(InputError, match="--ops"):
        overhead.parse_ops(",")
    assert overhead.parse_ops("all") == list(overhead.OPS)


def test_registered_with_the_cli():
    from tilewise.bench import cli

    assert cli._suites()["overhead"] is overhead
