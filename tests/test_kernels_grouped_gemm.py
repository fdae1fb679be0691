"""Persistent grouped GEMM under the Triton interpreter (TRITON_INTERPRET=1) against a float64 reference.

The kernel's trace (which program took which tile, and the tile's expert and coordinates) is
checked against the schedule of tilewise.model.waves.
"""

from __future__ import annotations

import pytest
from helpers import assert_close, kernel_device, poisoned

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels.grouped_gemm import GroupedConfig, grouped_matmul  # noqa: E402
from tilewise.model import waves  # noqa: E402

pytestmark = pytest.mark.kernel
DEV = kernel_device()
TOL = {torch.float16: 2e-3, torch.float32: 1e-5}  # relative to max |y|, K <= 100


def _inputs(counts, K, N, dtype, seed=0, extra_rows=0):
    g = torch.Generator().manual_seed(seed)
    T = sum(counts) + extra_rows
    x = torch.randn(T, K, generator=g).to(dtype).to(DEV)
    w = (torch.randn(len(counts), K, N, generator=g) / K**0.5).to(dtype).to(DEV)
    offsets = torch.tensor(counts, dtype=torch.int64).cumsum(0).to(torch.int32).to(DEV)
    return x, w, offsets


def _reference(x, w, counts):
    y = torch.zeros(x.shape[0], w.shape[2], dtype=torch.float64)
    s = 0
    for e, c in enumerate(counts):
        y[s : s + c] = x[s : s + c].double().cpu() @ w[e].double().cpu()
        s += c
    return y


@pytest.fixture(autouse=True)
def _poison_allocations(poison):
    """The schedule's scratch and an output the op allocates start poisoned (NaN / the int minimum)."""
    poison(torch, "empty")


def _check(y, ref, rows, dtype):
    """Every row the offsets cover, element by element (a row left NaN was never written)."""
    scale = max(ref[:rows].abs().max().item(), 1.0) if rows else 1.0
    assert_close(y[:rows], ref[:rows], atol=TOL[dtype] * scale, what="y")


def _run(x, w, offsets, cfg=None, programs=None, trace=False):
    out = poisoned((x.shape[0], w.shape[2]), x.dtype, x.device.type)
    r = grouped_matmul(x, w, offsets, out=out, config=cfg, programs=programs, trace=trace)
    return r


SKEWED = [5, 0, 17, 1, 40, 0, 3]  # T = 66: empty experts, one of 1 row, one over two tiles

CONFIGS = {
    "map": GroupedConfig(16, 32, 32, 4, 2, schedule="map"),
    "search": GroupedConfig(16, 32, 32, 4, 2, schedule="search"),
    "swap-tma-flat": GroupedConfig(16, 32, 32, 4, 2, swap_ab=True, tma=True, flatten=True),
    "search-tma": GroupedConfig(32, 16, 16, 4, 2, schedule="search", tma=True),
    "inline-flat": GroupedConfig(16, 32, 16, 4, 2, schedule="inline", flatten=True),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_skewed_counts_match_float64(name, dtype):
    # K = 40 is not a multiple of BLOCK_K; N = 72 not a multiple of BLOCK_N
    x, w, off = _inputs(SKEWED, 40, 72, dtype, seed=1)
    y = _run(x, w, off, CONFIGS[name], programs=3)
    _check(y, _reference(x, w, SKEWED), sum(SKEWED), dtype)


def test_default_config_fp16():
    counts = [9, 2, 0, 13]
    x, w, off = _inputs(counts, 32, 48, torch.float16, seed=2)
    _check(_run(x, w, off), _reference(x, w, counts), sum(counts), torch.float16)


@pytest.mark.parametrize(
    "counts",
    [[23], [0, 0, 31, 0], [0, 4, 0], [1, 1, 1, 1, 1]],
    ids=["one-expert", "all-to-one", "empty-ends", "one-row-each"],
)
def test_edge_counts(counts):
    x, w, off = _inputs(counts, 24, 40, torch.float32, seed=3)
    _check(_run(x, w, off, CONFIGS["search"], programs=2), _reference(x, w, counts), sum(counts), torch.float32)


def test_rows_past_the_last_offset_are_not_written():
    counts = [4, 6]
    x, w, off = _inputs(counts, 16, 24, torch.float32, extra_rows=5)
    y = _run(x, w, off, CONFIGS["map"])
    _check(y, _reference(x, w, counts), 10, torch.float32)
    assert torch.isnan(y[10:].cpu()).all()


def test_no_rows():
    x, w, off = _inputs([0, 0, 0], 16, 24, torch.float32)
    assert grouped_matmul(x, w, off).shape == (0, 24)


@pytest.mark.parametrize("schedule", ["map", "search", "inline"])
def test_trace_follows_the_model_schedule(schedule):
    counts = [3, 0, 40, 17, 0, 1, 33]
    N, BM, BN, P = 70, 16, 32, 3
    x, w, off = _inputs(counts, 16, N, torch.float32, seed=4)
    cfg = GroupedConfig(BM, BN, 16, 4, 2, schedule=schedule)
    y, tr = _run(x, w, off, cfg, programs=P, trace=True)
    _check(y, _reference(x, w, counts), sum(counts), torch.float32)
    sch = waves.grouped_schedule(counts, BM, N, BN)
    tr = tr.cpu().tolist()
    expected = []
    for t in range(sch.total_tiles):
        e, local = waves.tile_owner(sch.prefix, t)
        expected.append([t % P, e, *waves.local_tile_coords(sch, e, local)])
    assert tr[: sch.total_tiles] == expected
    assert all(r == [-1] * 4 for r in tr[sch.total_tiles :])  # the bound is only an upper bound
    for p in range(P):  # program p took exactly persistent_tiles(total, P, p)
        assert [t for t, r in enumerate(tr) if r[0] == p] == waves.persistent_tiles(sch.total_tiles, P, p)


# ----------------------------------------------------------------------------- bad inputs


def _good():
    return _inputs([2, 3], 8, 8, torch.float32)


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda x, w, o: (x, w, torch.tensor([3, 2], dtype=torch.int32)), "non-decreasing"),
        (lambda x, w, o: (x, w, torch.tensor([2, 3, 5], dtype=torch.int32)), r"offsets must have shape \[2\]"),
        (lambda x, w, o: (x, w, torch.tensor([2, 9], dtype=torch.int32)), "at most at the number of rows of x"),
        (lambda x, w, o: (x, w, torch.tensor([-1, 5], dtype=torch.int32)), ">= 0"),
        (lambda x, w, o: (x, w, o.long()), "offsets must be int32"),
        (lambda x, w, o: (x[None], w, o), r"x must have shape \[tokens, K\]"),
        (lambda x, w, o: (x, w[:, :4], o), r"w must have shape \[experts, 8, N\]"),
        (lambda x, w, o: (x, w[0], o), r"w must have shape \[experts, K, N\]"),
        (lambda x, w, o: (x, w.half(), o), "w must have the dtype of x"),
        (lambda x, w, o: (x.int(), w, o), "x must be float16, bfloat16 or float32"),
        (lambda x, w, o: (x.numpy(), w, o), "must be torch tensors"),
    ],
    ids=[
        "decreasing",
        "wrong-length",
        "beyond-T",
        "negative",
        "int64",
        "x-3d",
        "k-mismatch",
        "w-2d",
        "dtype",
        "int-x",
        "numpy",
    ],
)
def test_bad_inputs(mutate, match):
    x, w, o = mutate(*_good())
    with pytest.raises(InputError, match=match):
        grouped_matmul(x, w, o)


def test_bad_schedule():
    x, w, o = _good()
    with pytest.raises(InputError, match="config.schedule must be one of"):
        grouped_matmul(x, w, o, config=GroupedConfig(16, 16, 16, 4, 2, schedule="linear"))


def test_bad_out():
    x, w, o = _good()
    with pytest.raises(InputError, match="out must be"):
        grouped_matmul(x, w, o, out=torch.empty(5, 7))


try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        counts=st.lists(st.integers(0, 40), min_size=1, max_size=9).filter(lambda c: sum(c) > 0),
        programs=st.integers(1, 5),
        schedule=st.sampled_from(["map", "search", "inline"]),
    )
    def test_property_every_tile_once_in_model_order(counts, programs, schedule):
        """Any split of rows over experts: the kernel takes every tile of the model's schedule once."""
        N, BM, BN = 24, 16, 16
        x, w, off = _inputs(counts, 16, N, torch.float32, seed=sum(counts))
        y, tr = _run(x, w, off, GroupedConfig(BM, BN, 16, 4, 2, schedule=schedule), programs=programs, trace=True)
        sch = waves.grouped_schedule(counts, BM, N, BN)
        tr = tr.cpu().tolist()
        for t in range(sch.total_tiles):
            e, local = waves.tile_owner(sch.prefix, t)
            assert tr[t] == [t % programs, e, *waves.local_tile_coords(sch, e, local)]
        _check(y, _reference(x, w, counts), sum(counts), torch.float32)
