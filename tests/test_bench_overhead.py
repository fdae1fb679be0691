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
    assert us >= 190  # a busy-wait of 200 us per call (a loaded machine only adds to it)
    assert len(syncs) == 2


def test_alternate_runs_ours_and_peer_round_by_round():
    log: list = []
    t = overhead.alternate(_sleeper(50, log, "o"), _sleeper(300, log, "p"), calls=10, rounds=3, sync=lambda: None)
    timed = log[40:]  # after 20 warm-up calls of each
    assert timed == (["o"] * 10 + ["p"] * 10) * 3
    assert t["ours_min_us"] <= t["ours_us"] <= t["ours_max_us"]


def test_rows_name_the_host_and_the_target(monkeypatch, tmp_path):
    log: list = []
    cases = {
        "matmul": ("64x64x64", "bf16", _sleeper(30, log, "o"), "torch.matmul", _sleeper(25, log, "p")),
        "sum": ("65536", "fp32", _sleeper(60, log, "o"), "torch.sum", _sleeper(20, log, "p")),
        "empty": ("1 program", "-", _sleeper(10, log, "o"), "compiled kernel launch", _sleeper(5, log, "p")),
    }
    tags = {"gpu": "cpu", "cpu": "Test CPU 9000", "date": "2026-12-01", "torch": "x", "triton": "y", "command": "c"}
    out = tmp_path / "rows.jsonl"
    args = argparse.Namespace(ops="matmul,sum,empty", calls=20, rounds=3, rows_out=str(out))
    fixed = {"matmul": (30.0, 25.0), "sum": (60.0, 20.0), "empty": (10.0, 5.0)}  # (ours, peer) us
    order = iter(["matmul", "sum", "empty"])

    def fake_alternate(ours, peer, calls, rounds, sync, warmup):
        o, p = fixed[next(order)]
        return {"ours_us": o, "peer_us": p, "ours_min_us": o, "ours_max_us": o}

    monkeypatch.setattr(overhead, "alternate", fake_alternate)
    torch = pytest.importorskip("torch")
    rows = overhead._overhead_rows(args, torch, None, tags, lambda it, **k: it, cases=cases, sync=lambda: None)
    assert [r["kernel"] for r in rows] == ["matmul", "sum", "triton launch"]
    for r in rows:
        assert r["cpu"] == "Test CPU 9000" and r["date"] and r["command"]
        assert r["extra_us"] == pytest.approx(r["ours_us"] - r["peer_us"])
    assert rows[0]["within_target"] is True  # ~5 us over the peer
    assert rows[1]["within_target"] is False  # ~40 us over
    assert rows[2]["within_target"] is None  # a reference row, no target
    import json

    assert [json.loads(line) for line in out.read_text().splitlines()] == rows  # written as measured


def test_bad_op_list_is_refused():
    with pytest.raises(InputError, match="--ops"):
        overhead.parse_ops("matmul,nope")
    with pytest.raises(InputError, match="--ops"):
        overhead.parse_ops(",")
    assert overhead.parse_ops("all") == list(overhead.OPS)


def test_registered_with_the_cli():
    from tilewise.bench import cli

    assert cli._suites()["overhead"] is overhead


@pytest.mark.kernel
def test_every_case_runs_and_matches_its_peer_under_the_interpreter():
    """The real cases (on the CPU: Triton's interpreter): each op runs, and its answer is its peer's."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    import torch.nn.functional as F

    gpu = torch.cuda.is_available()
    cases = overhead._cases(torch, F, dev="cuda" if gpu else "cpu", dtype=None if gpu else torch.float16)
    assert set(cases) == set(overhead.OPS)
    with torch.no_grad():
        for name, (_shape, _dtype, ours, _peer_name, peer) in cases.items():
            if name in ("empty", "launcher", "grouped", "moe", "mhmoe"):  # torch._grouped_mm, the launches: CUDA
                continue
            a, b = ours(), peer()
            a = a[0] if isinstance(a, tuple) else a
            b = b[0] if isinstance(b, tuple) else b
            scale = float(b.float().abs().max())
            assert torch.allclose(a.float(), b.float(), atol=2e-2 * scale, rtol=2e-2), name


def test_eager_target_rows(monkeypatch):
    """The eager-target rows (timings stubbed: the real ones need the GPU): ratios, targets, model fields."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    from tilewise.bench import harness

    monkeypatch.setattr(overhead, "DEVICE", "cpu")
    monkeypatch.setattr(overhead, "GEMM_TARGETS", [(2, 64, 64)])
    monkeypatch.setattr(overhead, "DECODE_TARGETS", [("B1 Hq4 Hkv2 L64", 4, 2, 1, 64)])
    monkeypatch.setattr(harness, "time_pair", lambda *a, **k: {"ours_ms": 0.010, "peer_ms": 0.0095})
    monkeypatch.setattr(overhead, "alternate", lambda *a, **k: {"ours_us": 20.0, "peer_us": 12.0})
    tags = {"gpu": "NVIDIA H200", "cpu": "Test CPU", "date": "d", "torch": "t", "triton": "tr", "command": "c"}
    args = argparse.Namespace(rep_ms=1)
    rows = overhead._eager_rows(args, torch, F, tags, lambda it, **k: it)
    assert [r["kernel"] for r in rows] == ["matmul", "decode_attention", "sum"], rows
    for r in rows:
        assert "error" not in r
        assert r["speedup"] == pytest.approx(0.95) and r["speedup_loop"] == pytest.approx(0.6)
        assert r["meets_target_do_bench"] is (0.95 >= r["target"]) and r["meets_target_loop"] is False
        assert r["cpu"] == "Test CPU" and r["predicted_ms"] > 0
