"""One launch per call: `sum` over a split dimension and `decode_attention` over several splits
merge their partials inside the kernel (the last program to arrive adds them, then sets its counter back to
zero), with partials in a per-stream workspace instead of a per-call allocation; one split writes its output
directly. Under the Triton interpreter against float64 references, with the workspace poisoned (NaN) before
every call, awkward shapes, and the counters checked back at zero afterwards.

Run: TRITON_INTERPRET=1 pytest tests/test_kernels_one_launch.py
"""

from __future__ import annotations

import pytest
from helpers import assert_close, kernel_device

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from decode_reference import decode_reference  # noqa: E402

from tilewise.kernels import decode as dec  # noqa: E402
from tilewise.kernels import reduce, utils  # noqa: E402

pytestmark = pytest.mark.kernel
DEV = kernel_device()


@pytest.fixture(autouse=True)
def _poison_allocations(poison):
    """Every output the ops allocate starts as NaN: an element never written fails the comparison."""
    poison(reduce.torch, "empty", "empty_strided")


def _poison_workspaces():
    """NaN in every scratch buffer: a merge that read a partial nobody wrote this call would show it."""
    for cnt in utils._COUNTERS.values():
        assert int(cnt.abs().sum()) == 0, "a counter was left non-zero by the previous call"
    for buf in utils._SCRATCH.values():
        buf.fill_(float("nan"))


def _counters_back_at_zero():
    for cnt in utils._COUNTERS.values():
        assert int(cnt.abs().sum()) == 0, "a kernel did not set its counters back to zero"


class _CountLaunches:
    """Counts kernel launches through tilewise's Launcher (every op launches through one)."""

    def __init__(self, monkeypatch):
        self.n = 0
        real = utils.Launcher.__call__

        def counted(launcher, *args):
            self.n += 1
            return real(launcher, *args)

        monkeypatch.setattr(utils.Launcher, "__call__", counted)


# --------------------------------------------------------------------------- sum


def _plan(x, dim):
    reduce.sum(x, dim)
    return next(p for k, p in reduce._PLANS.items() if k[0] == x.shape and k[1] == x.stride() and k[5] == dim)


@pytest.mark.parametrize(
    "shape,dim,dtype",
    [
        ((3, 5000), -1, torch.float32),  # 3 rows along contiguous R: 4 splits of 1280
        ((7, 20000), 1, torch.float16),  # fp16 in, fp32 partials
        ((3000, 7), 0, torch.float32),  # column-wise: R strided, 11 splits
        ((2, 4500, 3), 1, torch.float64),  # fp64 partials
        ((1, 9000), -1, torch.float32),  # one row
    ],
)
def test_split_sum_is_one_launch_and_right(monkeypatch, shape, dim, dtype):
    x = torch.randn(*shape, dtype=dtype, device=DEV)
    plan = _plan(x, dim)
    assert plan.counters and plan.partials, "this shape was meant to split R"
    launches = _CountLaunches(monkeypatch)
    for _ in range(2):  # the second call reuses the workspace and the counters the first set back
        _poison_workspaces()
        s = reduce.sum(x, dim)
        _counters_back_at_zero()
        ref = x.double().sum(dim)
        tol = {torch.float16: 2e-3, torch.float32: 1e-5, torch.float64: 1e-12}[dtype]
        assert_close(s, ref, atol=tol * (1 + x.double().abs().sum(dim)), rtol=tol, what=f"sum {shape} dim {dim}")
    assert launches.n == 2, "one launch per call"


def test_split_sum_merges_more_splits_than_one_chunk(monkeypatch):
    """Column-wise over 10000 rows: 35 splits of 128 columns, added by the last split in two chunks of 32."""
    x = torch.randn(10000, 100, dtype=torch.float16, device=DEV)
    plan = _plan(x, 0)
    consts = plan.launcher.consts
    assert consts["SPLITS"] > consts["BLOCK_S"], consts
    _poison_workspaces()
    s = reduce.sum(x, 0)
    _counters_back_at_zero()
    assert_close(s, x.double().sum(0), atol=2e-3 * (1 + x.double().abs().sum(0)), rtol=2e-3, what="sum")


def test_split_sum_is_deterministic_and_keeps_dims():
    base = torch.randn(5, 3000, 3, dtype=torch.float32, device=DEV)
    x = base.transpose(0, 2)  # [3, 3000, 5], strided every way
    a = reduce.sum(x, 1, keepdim=True)
    b = reduce.sum(x, 1, keepdim=True)
    assert a.shape == (3, 1, 5)
    assert torch.equal(a, b), "the merge order must not depend on which split arrives last"
    assert_close(a, x.double().sum(1, keepdim=True), atol=1e-4, rtol=1e-5, what="sum keepdim")


def test_unsplit_sum_needs_no_workspace(monkeypatch):
    x = torch.randn(4, 300, dtype=torch.float32, device=DEV)
    plan = _plan(x, 1)
    assert not plan.counters and not plan.partials
    monkeypatch.setattr(reduce, "workspace", lambda *a, **k: (_ for _ in ()).throw(AssertionError("workspace")))
    assert_close(reduce.sum(x, 1), x.double().sum(1), atol=1e-4, rtol=1e-5, what="sum")


@pytest.mark.parametrize("numel", [1, 7, 1000, 70001])
def test_full_sum_partials_live_in_the_workspace(monkeypatch, numel):
    x = torch.randn(numel, dtype=torch.float32, device=DEV)
    reduce.sum(x)
    launches = _CountLaunches(monkeypatch)
    allocs = []
    for name in ("empty", "empty_strided", "empty_like", "zeros"):
        real = getattr(reduce.torch, name)
        monkeypatch.setattr(reduce.torch, name, lambda *a, _real=real, **k: allocs.append(a) or _real(*a, **k))
    _poison_workspaces()
    s = reduce.sum(x)
    _counters_back_at_zero()
    assert launches.n == 1 and len(allocs) == 1, "one launch and one allocation (the output) per call"
    assert_close(s, x.double().sum(), atol=1e-5 * (1 + x.double().abs().sum()), rtol=1e-5, what="sum")


# --------------------------------------------------------------------------- decode


def _decode_check(q, k, v, lens, **kw):
    _poison_workspaces()
    out, lse = dec.decode_attention(q, k, v, torch.tensor(lens, dtype=torch.int32, device=DEV), **kw)
    _counters_back_at_zero()
    ro, rl = decode_reference(q.cpu(), k.cpu(), v.cpu(), lens)
    tol = {torch.float16: 4e-3, torch.float32: 4e-5}[q.dtype]
    assert out.shape == q.shape
    assert_close(out.reshape(ro.shape), ro, atol=tol, what="out")
    assert_close(lse, rl, atol=1e-4, what="lse")
    return out, lse


@pytest.mark.parametrize(
    "hq,hk,splits,lens",
    [
        (8, 2, 3, [0, 1, 257, 300]),  # GQA 4, an empty sequence, a one-key one
        (6, 2, 5, [299, 64]),  # GQA 3: a group that is not a power of two
        (4, 4, 7, [130, 7]),  # MHA (group 1), splits past the end of the short sequence
        (16, 2, 20, [300, 255]),  # GQA 8 and 20 splits: the merge reads its partials in chunks
    ],
)
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_split_decode_merges_in_one_launch(monkeypatch, hq, hk, splits, lens, dtype):
    b_ = len(lens)
    q = torch.randn(b_, hq, 1, 32, dtype=dtype, device=DEV)
    k = torch.randn(b_, hk, 300, 32, dtype=dtype, device=DEV)
    v = torch.randn(b_, hk, 300, 32, dtype=dtype, device=DEV)
    launches = _CountLaunches(monkeypatch)
    first = _decode_check(q, k, v, lens, num_splits=splits, tile=(16, 4, 1))
    second = _decode_check(q, k, v, lens, num_splits=splits, tile=(16, 4, 1))
    assert launches.n == 2, "one launch per call: no merge kernel"
    for a, b in zip(first, second):
        assert torch.equal(a, b), "the merge order must not depend on which split arrives last"


def test_split_decode_paged_and_strided():
    """A paged cache and a q that is a strided view, split in 4: one launch and right."""
    pages, page, hk, d = 12, 32, 2, 32
    kp = torch.randn(pages, hk, page, d, dtype=torch.float32, device=DEV)
    vp = torch.randn(pages, hk, page, d, dtype=torch.float32, device=DEV)
    table = torch.tensor([[3, 0, 7, 5], [11, 2, 9, 1]], dtype=torch.int32, device=DEV)
    lens = [120, 33]
    q = torch.randn(2, 8, 2 * d, dtype=torch.float32, device=DEV)[..., ::2]
    _poison_workspaces()
    out, lse = dec.decode_attention(q, kp, vp, torch.tensor(lens, device=DEV), block_table=table, num_splits=4)
    _counters_back_at_zero()
    k = torch.stack([kp[table[b].long()].permute(1, 0, 2, 3).reshape(hk, -1, d) for b in range(2)])
    v = torch.stack([vp[table[b].long()].permute(1, 0, 2, 3).reshape(hk, -1, d) for b in range(2)])
    ro, rl = decode_reference(q.cpu(), k.cpu(), v.cpu(), lens)
    assert_close(out, ro, atol=4e-5, what="out")
    assert_close(lse, rl, atol=1e-4, what="lse")


def test_single_split_writes_out_directly(monkeypatch):
    """One split: the kernel writes out and lse itself, with no workspace and one launch."""
    q = torch.randn(3, 8, 32, dtype=torch.float16, device=DEV)
    k = torch.randn(3, 2, 100, 32, dtype=torch.float16, device=DEV)
    v = torch.randn(3, 2, 100, 32, dtype=torch.float16, device=DEV)
    monkeypatch.setattr(dec, "workspace", lambda *a, **kw: (_ for _ in ()).throw(AssertionError("workspace")))
    launches = _CountLaunches(monkeypatch)
    _decode_check(q, k, v, [100, 0, 37], num_splits=1)
    assert launches.n == 1
    plan = [p for p in dec._PLANS.values() if p.launcher.grid[0] == 1]
    assert plan and all(p.ws_numel == 0 for p in plan)


def test_a_grown_buffer_keeps_the_old_one_alive():
    """A CUDA graph captured with a counter or scratch buffer keeps its address: growing must not free it."""
    dev = torch.device("cpu")
    old_cnt = utils.counters(dev, 8, pool="test-grow")
    cnt, buf = utils.workspace(dev, 8, 10, torch.float32, "test-grow")
    assert cnt is old_cnt and buf.numel() >= 10
    bigger_cnt = utils.counters(dev, 5000, pool="test-grow")
    _, bigger_buf = utils.workspace(dev, 8, 100_000, torch.float32, "test-grow")
    assert bigger_cnt.numel() >= 5000 and bigger_buf.numel() >= 100_000
    assert any(t is old_cnt for t in utils._RETIRED) and any(t is buf for t in utils._RETIRED)
    assert int(bigger_cnt.abs().sum()) == 0
