"""On the GPU: `sum` over a split dimension and split-KV `decode_attention` are one launch whose last program
merges the partials (real concurrency: the arrival order varies, the answer may not), the counters are back
at zero after every call, CUDA-graph capture works with the workspace, two streams get two workspaces, and
the launchers take the direct path on this Triton."""

from __future__ import annotations

import pytest
from helpers import assert_close

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from decode_reference import decode_reference  # noqa: E402

from tilewise.kernels import decode as dec  # noqa: E402
from tilewise.kernels import reduce, utils  # noqa: E402

pytestmark = pytest.mark.gpu
DEV = "cuda"


def _counters_zero():
    torch.cuda.synchronize()
    for cnt in utils._COUNTERS.values():
        assert int(cnt.abs().sum()) == 0, "a kernel left a counter non-zero"


def _paths(plans):
    return {p.launcher.path for p in plans.values()}


def test_sum_last_dim_of_64_by_2_20_is_one_launch_and_deterministic():
    x = torch.randn(64, 1 << 20, device=DEV, dtype=torch.float16)
    s = reduce.sum(x, -1)
    plan = [p for k, p in reduce._PLANS.items() if k[0] == x.shape and k[5] == -1][0]
    assert plan.launcher.consts["SPLITS"] > 1 and plan.counters
    ref = x.double().sum(-1)
    assert_close(s, ref, atol=1e-3 * x.double().abs().sum(-1), rtol=2**-10, what="sum over 2^20")
    for _ in range(20):
        assert torch.equal(reduce.sum(x, -1), s), "the last-arriving merge must not depend on arrival order"
    _counters_zero()
    if utils.fast_launch_enabled():
        assert plan.launcher.path in ("direct", "runner")


@pytest.mark.parametrize("shape,dim", [((3, 5, 100003), -1), ((100003, 7), 0), ((9, 70000, 3), 1)])
def test_split_sums_awkward_shapes(shape, dim):
    x = torch.randn(*shape, device=DEV, dtype=torch.float32)
    s = reduce.sum(x, dim)
    assert_close(s, x.double().sum(dim), atol=1e-5 * x.double().abs().sum(dim) + 1e-6, rtol=1e-6, what="sum")
    assert torch.equal(reduce.sum(x, dim), s)
    _counters_zero()


@pytest.mark.parametrize("hq,hk", [(32, 8), (8, 2), (12, 4)])
def test_split_decode_one_launch_right_and_deterministic(hq, hk):
    lens = [8192, 1, 0, 5000]
    q = torch.randn(4, hq, 1, 128, device=DEV, dtype=torch.bfloat16)
    k = torch.randn(4, hk, 8192, 128, device=DEV, dtype=torch.bfloat16)
    v = torch.randn(4, hk, 8192, 128, device=DEV, dtype=torch.bfloat16)
    tl = torch.tensor(lens, device=DEV, dtype=torch.int32)
    dec._PLANS.clear()
    out, lse = dec.decode_attention(q, k, v, tl, num_splits=16, merge="inline")
    (plan,) = dec._PLANS.values()
    assert plan.ws_numel and plan.launcher.grid[0] == 16
    ro, rl = decode_reference(q, k, v, lens)
    assert_close(out.reshape(ro.shape), ro, atol=2e-2, what="out")
    assert_close(lse, rl, atol=1e-3, what="lse")
    for _ in range(20):
        o2, l2 = dec.decode_attention(q, k, v, tl, num_splits=16, merge="inline")
        assert torch.equal(o2, out) and torch.equal(l2, lse), "the merge must not depend on arrival order"
    _counters_zero()


def test_decode_and_sum_capture_in_a_cuda_graph():
    q = torch.randn(2, 32, 1, 128, device=DEV, dtype=torch.bfloat16)
    k = torch.randn(2, 8, 8192, 128, device=DEV, dtype=torch.bfloat16)
    v = torch.randn(2, 8, 8192, 128, device=DEV, dtype=torch.bfloat16)
    lens = torch.tensor([8192, 3000], device=DEV, dtype=torch.int32)
    x = torch.randn(64, 1 << 16, device=DEV, dtype=torch.float16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # plans, compiles and the side stream's workspaces, outside the capture
        dec.decode_attention(q, k, v, lens, max_seq_len=8192)
        reduce.sum(x, -1)
        reduce.sum(x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out, lse = dec.decode_attention(q, k, v, lens, max_seq_len=8192)
        s_dim = reduce.sum(x, -1)
        s_all = reduce.sum(x)
    for new_lens in ([100, 8192], [8192, 1]):
        lens.copy_(torch.tensor(new_lens, device=DEV))
        x.normal_()
        g.replay()
        torch.cuda.synchronize()
        ro, rl = decode_reference(q, k, v, new_lens)
        assert_close(out.reshape(ro.shape), ro, atol=2e-2, what="out (graph)")
        assert_close(lse, rl, atol=1e-3, what="lse (graph)")
        assert_close(s_dim, x.double().sum(-1), atol=1e-3 * x.double().abs().sum(-1), rtol=2**-10, what="sum dim")
        assert_close(s_all, x.double().sum(), atol=1e-4 * x.double().abs().sum(), rtol=2**-10, what="sum")
    _counters_zero()


def test_two_streams_two_workspaces():
    xs = [torch.randn(8, 1 << 18, device=DEV, dtype=torch.float32) for _ in range(2)]
    streams = [torch.cuda.Stream() for _ in range(2)]
    for st in streams:
        st.wait_stream(torch.cuda.current_stream())
    outs = [[], []]
    for _ in range(10):
        for i, st in enumerate(streams):
            with torch.cuda.stream(st):
                outs[i].append(reduce.sum(xs[i], -1))
    torch.cuda.synchronize()
    for i in range(2):
        ref = xs[i].double().sum(-1)
        for s in outs[i]:
            assert_close(s, ref, atol=1e-5 * xs[i].double().abs().sum(-1), rtol=1e-6, what=f"stream {i}")
    keys = {k for k in utils._SCRATCH if k[0] == "sum" and k[2] in {s.cuda_stream for s in streams}}
    assert len(keys) == 2
    _counters_zero()


def test_launchers_go_direct_on_this_triton():
    if not utils.fast_launch_enabled() or utils._VERSION not in utils.DIRECT_LAUNCH_VERSIONS:
        pytest.skip("no direct launch on this Triton")
    x = torch.randn(65536, device=DEV)
    reduce._PLANS.clear()
    for _ in range(3):
        s = reduce.sum(x)
    assert _paths(reduce._PLANS) == {"direct"}
    assert_close(s, x.double().sum(), atol=1e-4, rtol=1e-5, what="sum")
