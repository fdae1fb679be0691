"""tilewise.bench.timing (the one CUDA-graph timer and quantile definition) and the code version every row
records (harness.source_state), on the CPU. The timer runs against a stand-in for torch.cuda whose clock
advances by each call's known cost, so what it must report is known exactly."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilewise.bench import harness, timing

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- quantiles


@given(st.lists(st.floats(0.001, 1e4), min_size=1, max_size=60))
def test_quantiles_match_linear_interpolation(xs):
    med, p20, p80 = timing.quantiles(xs)
    ref = np.percentile(np.array(xs, dtype=np.float64), [50, 20, 80])  # numpy's default: linear between samples
    assert (med, p20, p80) == pytest.approx(tuple(ref), rel=1e-9, abs=1e-12)
    eps = 1e-9 * max(xs)  # interpolation rounds in the last bit
    assert min(xs) - eps <= p20 <= med + eps and med <= p80 + eps and p80 <= max(xs) + eps


def test_quantiles_small_cases():
    assert timing.quantiles([3.0]) == (3.0, 3.0, 3.0)
    assert timing.quantiles([1.0, 2.0]) == pytest.approx((1.5, 1.2, 1.8))
    with pytest.raises(ValueError):
        timing.quantiles([])


# --------------------------------------------------------------------------- the timer, on a fake clock


class _Clock:
    def __init__(self):
        self.t = 0.0
        self.log: list[str] = []


def _fake_torch(clock: _Clock) -> types.ModuleType:
    class Event:
        def __init__(self, enable_timing=False):
            self.at = None

        def record(self):
            self.at = clock.t

        def elapsed_time(self, other):
            return other.at - self.at

    class Buffer:
        def zero_(self):
            clock.t += 1000.0  # a flush is slow: it must stay outside the timed events
            clock.log.append("flush")

    class Graph:
        def __init__(self):
            self.calls = []

        def replay(self):
            for c in self.calls:
                c()

    class _Capture:
        def __init__(self, g):
            self.g = g

        def __enter__(self):
            clock.capturing = self.g

        def __exit__(self, *a):
            clock.capturing = None

    clock.capturing = None
    cuda = types.SimpleNamespace(
        Event=Event,
        synchronize=lambda: None,
        _sleep=lambda cycles: clock.log.append(f"sleep {cycles}"),
        Stream=lambda: types.SimpleNamespace(wait_stream=lambda s: None),
        current_stream=lambda: types.SimpleNamespace(wait_stream=lambda s: None),
        stream=lambda s: _Nothing(),
        get_sync_debug_mode=lambda: 0,
        set_sync_debug_mode=lambda m: None,
        CUDAGraph=Graph,
        graph=_Capture,
    )
    t = types.ModuleType("torch")
    t.cuda = cuda
    t.uint8 = "uint8"
    t.empty = lambda *a, **k: Buffer()
    return t


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


@pytest.fixture
def clock(monkeypatch):
    c = _Clock()
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(c))
    monkeypatch.setattr(timing, "_FLUSH", {})
    return c


def _side(clock, name, ms, first_ms=None):
    """A call that costs `ms` on the clock (the first one `first_ms`: a compile), logging its name."""
    state = {"n": 0}

    def call(*_):
        state["n"] += 1
        cost = first_ms if (first_ms is not None and state["n"] == 1) else ms
        if clock.capturing is not None:  # inside a capture: the graph replays the work later
            clock.capturing.calls.append(lambda: _advance(clock, name, ms))
            return name
        _advance(clock, name, cost)
        return name

    return call


def _advance(clock, name, ms):
    clock.t += ms
    clock.log.append(name)


def test_time_calls_alternates_flushes_outside_and_drops_the_warm_round(clock):
    a = _side(clock, "a", 2.0, first_ms=500.0)  # its first call "compiles"
    b = _side(clock, "b", 3.0)
    t = timing.time_calls({"a": a, "b": b}, rounds=4)
    assert t["a"].samples_ms == [2.0] * 4 and t["b"].samples_ms == [3.0] * 4  # no flush, no compile inside
    assert (t["a"].median_ms, t["a"].p20_ms, t["a"].p80_ms) == (2.0, 2.0, 2.0)
    order = [x for x in clock.log if x in ("a", "b")]
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a", "a", "b"]  # warm round, then reversing rounds
    assert clock.log.count("flush") == 10  # before every run, warm round included


def test_graph_replays_are_divided_by_their_calls(clock):
    g = timing.capture(_side(clock, "k", 1.5), calls=8)
    assert g.calls == 8 and g.out == "k"
    clock.log.clear()
    t = timing.time_calls({"g": g}, rounds=3, reps=2, flush=False, warm_round=False, gpu_wait_cycles=100)
    assert t["g"].samples_ms == pytest.approx([1.5] * 6)  # 8 calls of 1.5 per replay, per call
    assert clock.log.count("sleep 100") == 3 and "flush" not in clock.log
    assert timing.graph_ms(_side(clock, "h", 0.25), calls=4, rounds=2).median_ms == pytest.approx(0.25)


def test_reps_for_fills_the_budget(clock):
    assert timing.reps_for(_side(clock, "x", 2.0), 100.0) == 50
    assert timing.reps_for(_side(clock, "y", 1000.0), 100.0) == 5  # at least lo
    assert timing.reps_for(timing.capture(_side(clock, "z", 0.001), calls=10), 100.0) == 1000  # at most hi


def test_bad_arguments(clock):
    with pytest.raises(ValueError, match="rounds and reps"):
        timing.time_calls({"a": _side(clock, "a", 1.0)}, rounds=0)
    with pytest.raises(ValueError, match="calls"):
        timing.capture(_side(clock, "a", 1.0), calls=0)


def test_one_timer_in_the_tree():
    """No benchmark captures or times a CUDA graph on its own: they all go through tilewise.bench.timing."""
    hits = []
    for p in [*ROOT.joinpath("benchmarks").rglob("*.py"), *ROOT.joinpath("src", "tilewise", "bench").rglob("*.py")]:
        if p.name == "timing.py":
            continue
        text = p.read_text()
        for needle in ("torch.cuda.CUDAGraph(", "torch.cuda.graph(", "statistics.quantiles(", "def _quantiles"):
            if needle in text:
                hits.append(f"{p.relative_to(ROOT)}: {needle}")
    assert not hits, hits


# --------------------------------------------------------------------------- what every row records


def test_source_state_in_this_checkout(monkeypatch):
    for k in ("TILEWISE_COMMIT", "TILEWISE_DIRTY"):
        monkeypatch.delenv(k, raising=False)
    s = harness.source_state()
    assert s["version"] == __import__("tilewise").__version__
    if harness._checkout_root() is None:
        pytest.skip("not running from a git checkout")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert s["commit"] == head and len(head) == 40
    assert s["dirty"] in (True, False)


@pytest.mark.parametrize(
    ("env", "commit", "dirty"),
    [
        ({}, "unknown", "unknown"),
        ({"TILEWISE_COMMIT": "abc123"}, "abc123", "unknown"),
        ({"TILEWISE_COMMIT": "abc123", "TILEWISE_DIRTY": "1"}, "abc123", True),
        ({"TILEWISE_COMMIT": "abc123", "TILEWISE_DIRTY": "no"}, "abc123", False),
        ({"TILEWISE_DIRTY": "1"}, "unknown", "unknown"),  # a dirty flag without a commit says nothing
    ],
)
def test_source_state_without_git_reads_the_environment(monkeypatch, env, commit, dirty):
    monkeypatch.setattr(harness, "_checkout_root", lambda: None)
    for k in ("TILEWISE_COMMIT", "TILEWISE_DIRTY"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    s = harness.source_state()
    assert (s["commit"], s["dirty"]) == (commit, dirty)


def test_every_row_carries_the_source_state(monkeypatch):
    monkeypatch.setattr(harness, "_checkout_root", lambda: None)
    monkeypatch.setenv("TILEWISE_COMMIT", "feedbeef")
    monkeypatch.setenv("TILEWISE_DIRTY", "0")
    tags = harness.env_tags("tilewise bench gemm")
    assert {"gpu", "date", "torch", "triton", "cpu", "command", "version", "commit", "dirty"} <= set(tags)
    from tilewise.model import traffic

    row = harness.make_row(
        kernel="matmul", shape="64x64x64", dtype="bf16", peer="cuBLAS", ours_ms=0.01, peer_ms=0.01,
        flops=traffic.gemm_flops(64, 64, 64), nbytes=traffic.gemm_bytes(64, 64, 64, "bf16"), tags=tags, gpu_key="h200",
    )  # fmt: skip
    assert (row["commit"], row["dirty"], row["version"]) == ("feedbeef", False, tags["version"])


def test_the_environment_wins_over_a_copied_git(monkeypatch):
    """A tree copied to a GPU machine can carry a stale .git: the commit its copier names is the one recorded."""
    monkeypatch.setenv("TILEWISE_COMMIT", "feedbeef")
    monkeypatch.setenv("TILEWISE_DIRTY", "0")
    s = harness.source_state()
    assert (s["commit"], s["dirty"]) == ("feedbeef", False)
