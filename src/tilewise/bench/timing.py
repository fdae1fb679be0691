"""The one CUDA-graph timer and the one p20/p50/p80 definition every benchmark of tilewise uses.

    g = capture(lambda i: matmul(a[i % 4], b[i % 4]), calls=8)   # one graph of 8 calls over 4 input copies
    t = time_calls({"ours": g, "peer": peer_graph}, rounds=5)     # alternating rounds, CUDA events
    t["ours"].median_ms, t["ours"].p20_ms, t["ours"].p80_ms       # per call

Why a graph: a replay holds only the kernels, so the time is the GPU's, without Python, argument checks
and launch cost (a short call's eager time is often the host's: ~10 us per launch on the H200's host).
Why alternate: two sides timed in the same rounds see the same clock and the same neighbours; the order
reverses every round so neither always runs right after the other. Why a flush: a 256 MiB write (over 4x
the H200's 60 MB L2) before a timed replay means a memory-bound call does not find its inputs in L2; it is
recorded outside the timed events.

`time_calls` also times plain callables (eager calls) the same way. Only `capture` and `time_calls` need a
GPU; `quantiles` is plain Python.
"""

from __future__ import annotations

import statistics
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FLUSH_BYTES = 256 << 20  # > 4x the 60 MB L2 of an H100/H200: a flush leaves none of the inputs there


def quantiles(xs: Sequence[float]) -> tuple[float, float, float]:
    """(median, p20, p80) of `xs`: the inclusive method (p20 and p80 interpolate between samples, so
    they lie within the samples' range); a single sample is its own p20 and p80."""
    s = sorted(float(x) for x in xs)
    if not s:
        raise ValueError("quantiles of no samples")
    if len(s) == 1:
        return s[0], s[0], s[0]
    q = statistics.quantiles(s, n=10, method="inclusive")
    return statistics.median(s), q[1], q[7]


@dataclass
class Graph:
    """A captured CUDA graph of `calls` calls; `out` is what the last captured call returned (its
    tensors are the graph's static outputs, rewritten by every replay)."""

    graph: Any
    calls: int
    out: Any = None

    def replay(self) -> None:
        self.graph.replay()


@dataclass
class Timing:
    """Per-call times in ms: the median and p20/p80 over every sample, and each sample in order."""

    median_ms: float
    p20_ms: float
    p80_ms: float
    samples_ms: list[float] = field(default_factory=list)

    @classmethod
    def of(cls, samples: Sequence[float]) -> Timing:
        med, p20, p80 = quantiles(samples)
        return cls(med, p20, p80, [float(x) for x in samples])


def capture(step: Callable[[int], Any], calls: int = 1, *, warmup: int = 2, refuse_sync: bool = False) -> Graph:
    """A CUDA graph of step(0), ..., step(calls - 1), after `warmup` calls on a side stream (compiles,
    allocator pools, workspaces). With `refuse_sync`, the warm-up runs with torch's sync debugging set to
    raise: a call that waits for the host (.item(), a blocking copy) is refused before any capture
    begins, because a capture that fails midway leaves torch's CUDA RNG state half-captured for the rest
    of the process. Raises whatever the warm-up or the capture raises."""
    import torch

    if calls < 1:
        raise ValueError(f"calls must be >= 1, got {calls}")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    prev = torch.cuda.get_sync_debug_mode()
    if refuse_sync:
        with warnings.catch_warnings():  # "a prototype feature": it may miss some syncs; the capture still checks
            warnings.simplefilter("ignore", UserWarning)
            torch.cuda.set_sync_debug_mode("error")
    try:
        with torch.cuda.stream(side):
            for i in range(max(warmup, 1)):
                step(i % calls)
    finally:
        if refuse_sync:
            torch.cuda.set_sync_debug_mode(prev)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    out = None
    with torch.cuda.graph(g):
        for i in range(calls):
            out = step(i)
    torch.cuda.synchronize()
    return Graph(g, calls, out)


_FLUSH: dict[str, Any] = {}


def _flush_buffer() -> Any:
    import torch

    if "buf" not in _FLUSH:
        _FLUSH["buf"] = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    return _FLUSH["buf"]


def time_calls(
    sides: Mapping[str, Graph | Callable[[], Any]],
    *,
    rounds: int = 5,
    reps: int = 1,
    flush: bool = True,
    warm_round: bool = True,
    gpu_wait_cycles: int = 0,
) -> dict[str, Timing]:
    """Time every side in alternating rounds (forward, backward, forward, ...): per round and side, `reps`
    timed runs, each a graph replay (divided by its `calls`) or one call of a plain callable, bracketed by
    CUDA events, with the L2 flushed before each run when `flush` (outside the events). A first, untimed
    round warms every side when `warm_round`. `gpu_wait_cycles` puts a GPU-side wait before each round so
    the host enqueues the round's events and runs ahead of the GPU: a host thread descheduled between an
    event and its replay (on a loaded host) would otherwise time the gap too."""
    import torch

    if rounds < 1 or reps < 1:
        raise ValueError(f"rounds and reps must be >= 1, got {rounds} and {reps}")
    names = list(sides)
    buf = _flush_buffer() if flush else None
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds + (1 if warm_round else 0)):
        order = names if r % 2 == 0 else names[::-1]
        if gpu_wait_cycles:
            torch.cuda._sleep(int(gpu_wait_cycles))
        events = []
        for n in order:
            side = sides[n]
            run = side.replay if isinstance(side, Graph) else side
            per = side.calls if isinstance(side, Graph) else 1
            for _ in range(reps):
                if buf is not None:
                    buf.zero_()
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                run()
                b.record()
                events.append((n, per, a, b))
        torch.cuda.synchronize()
        if warm_round and r == 0:
            continue
        for n, per, a, b in events:
            samples[n].append(a.elapsed_time(b) / per)
    return {n: Timing.of(samples[n]) for n in names}


def reps_for(side: Graph | Callable[[], Any], budget_ms: float, *, lo: int = 5, hi: int = 1000) -> int:
    """How many timed runs of `side` fit in about `budget_ms` (from 3 flushed runs), clamped to [lo, hi]."""
    est = time_calls({"x": side}, rounds=1, reps=3)["x"].median_ms
    if isinstance(side, Graph):
        est *= side.calls
    return max(lo, min(hi, int(budget_ms / max(est, 1e-3))))


def graph_ms(step: Callable[[], Any], *, calls: int = 1, rounds: int = 5, reps: int = 1, flush: bool = True) -> Timing:
    """Capture `calls` calls of step() in one graph and time its replays (`time_calls`): per-call ms."""
    g = capture(lambda _i: step(), calls)
    try:
        return time_calls({"x": g}, rounds=rounds, reps=reps, flush=flush)["x"]
    finally:
        del g
