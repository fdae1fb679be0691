"""The harness's CUDA-graph timing on the GPU: graph replays time the kernel without the host's per-call cost."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from tilewise.bench import harness  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture
def graph_mode():
    harness.set_cuda_graph(True)
    yield
    harness.set_cuda_graph(False)


def test_graph_time_removes_host_work(graph_mode):
    import time

    xs = [torch.randn(1 << 16, device="cuda") for _ in range(2)]

    def slow_host(i):  # 300 us of Python before a tiny kernel: eager time is the host's
        t = time.perf_counter()
        while time.perf_counter() - t < 3e-4:
            pass
        return xs[i] * 2

    t = harness.time_pair(slow_host, lambda i: xs[i] * 2, rotate=2, rounds=2, rep_ms=20, warmup_ms=5)
    assert t["ours_ms"] > 0.25  # the busy wait shows in the eager time
    assert t["ours_graph_ms"] < 0.1  # and not in the replay: the graph holds only the kernel
    f = harness.timing_fields(t)
    assert f["ours_host_ms"] > 0.15 and 0.3 < f["speedup_graph"] < 3


def test_uncapturable_side_is_noted_not_fatal(graph_mode):
    x = torch.randn(1 << 12, device="cuda")
    t = harness.time_pair(lambda i: x * 2, lambda i: (x * 2).sum().item(), rounds=1, rep_ms=10, warmup_ms=5)
    assert "ours_graph_ms" in t and "peer_graph_ms" not in t
    assert "peer: not capturable" in t["graph_note"]
    # the process is still sound afterwards: the refused side never began a capture, so the RNG and
    # the next captures work (a failed capture would break torch.randn for the rest of the process)
    assert torch.isfinite(torch.randn(8, device="cuda")).all().item()
    t = harness.time_pair(lambda i: x * 2, None, rounds=1, rep_ms=10, warmup_ms=5)
    assert t["ours_graph_ms"] > 0
