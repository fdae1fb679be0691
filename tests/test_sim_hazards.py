"""Hazards: shared races without a barrier, barriers under divergence, out-of-bounds accesses."""

import importlib.util
import os

import numpy as np
import pytest

from tilewise.sim import blockDim, float32, kernel, launch, shared, syncthreads, threadIdx

EX = os.path.join(os.path.dirname(__file__), "..", "examples", "sim")


def _example(name):
    spec = importlib.util.spec_from_file_location(f"hz_{name}", os.path.join(EX, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _line(mod, needle):
    src = open(mod.__file__).read().splitlines()
    return next(i + 1 for i, s in enumerate(src) if needle in s)


def test_missing_second_barrier_is_a_write_after_read():
    m = _example("gemm_tiled_no_second_barrier")
    args = m.setup((1, 1, 1), (32, 32, 1), np.random.default_rng(0))
    t = launch(m.gemm, (1, 1), (32, 32), *args)
    kinds = {(h.kind, h.line, h.other_line) for h in t.hazards}
    read = _line(m, "acc += sA[ty][k] * sB[k][tx]")
    assert kinds == {("WAR", _line(m, "sA[ty][tx] ="), read), ("WAR", _line(m, "sB[ty][tx] ="), read)}
    h = t.hazards[0]
    ex = h.examples[0]
    assert ex["thread"] != ex["other_thread"]


@pytest.mark.parametrize(
    "name,kname,grid,block",
    [
        ("gemm_tiled", "gemm", (2, 1), (32, 32)),
        ("block_sum", "block_sum", (2,), (256,)),
        ("block_sum", "block_sum_shfl", (2,), (256,)),
        ("block_sum", "block_sum_warp_sync", (2,), (256,)),
        ("transpose", "transpose_naive", (2, 2), (32, 8)),
        ("transpose", "transpose_padded", (2, 2), (32, 8)),
        ("transpose", "transpose_swizzled", (2, 2), (32, 8)),
        ("divergent", "divergent", (2,), (256,)),
        ("divergent", "divergent_select", (2,), (256,)),
        ("gemm_naive", "gemm_naive", (2, 2), (32, 4)),
    ],
)
def test_correct_examples_have_no_hazards(name, kname, grid, block):
    m = _example(name)
    g3 = tuple(grid) + (1,) * (3 - len(grid))
    b3 = tuple(block) + (1,) * (3 - len(block))
    args = m.setup(g3, b3, np.random.default_rng(0))
    t = launch(getattr(m, kname), grid, block, *args)
    assert t.hazards == []


def test_missing_zero_padding_reads_out_of_bounds():
    m = _example("gemm_tiled_no_padding")
    args = m.setup((2, 2, 1), (32, 32, 1), np.random.default_rng(0))
    t = launch(m.gemm_no_padding, (2, 2), (32, 32), *args)
    got = {(h.kind, h.array, h.line) for h in t.hazards}
    assert ("oob-global", "A", _line(m, "sA[ty][tx] = A[")) in got
    assert ("oob-global", "B", _line(m, "sB[ty][tx] = B[")) in got


@kernel
def k_missing_first_barrier(x, y):
    s = shared(64, float32)
    i = threadIdx.x
    s[i] = x[i]
    y[i] = s[(i + 1) % blockDim.x]  # reads a neighbour's element: needs a barrier first


@kernel
def k_sync_in_branch(x):
    s = shared(64, float32)
    i = threadIdx.x
    if i < 40:
        s[i] = 1.0
        syncthreads()  # only 40 of 64 threads get here


@kernel
def k_shared_oob(x):
    s = shared((8, 8), float32)
    i = threadIdx.x
    s[i // 8][i % 8] = 1.0
    syncthreads()
    x[i] = s[8][i]  # row 8 does not exist


def test_raw_sync_divergence_and_shared_oob():
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, dtype=np.float32)
    t = launch(k_missing_first_barrier, 1, 64, x, y)
    assert {h.kind for h in t.hazards} == {"RAW"}
    assert t.hazards[0].count == 64
    t = launch(k_sync_in_branch, 1, 64, x)
    (h,) = t.hazards
    assert h.kind == "sync-divergence" and h.count == 40
    t = launch(k_shared_oob, 1, 64, x)
    kinds = {h.kind for h in t.hazards}
    assert "oob-shared" in kinds


def test_hazards_can_be_switched_off():
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, dtype=np.float32)
    t = launch(k_missing_first_barrier, 1, 64, x, y, hazards=False)
    assert t.hazards == []


def test_warp_synchronous_tail_without_syncwarp_is_a_race():
    """block_sum_warp_unsynced: warp 0 reads what its other lanes wrote in the round before, with no
    __syncwarp() in between (a race since Volta's independent thread scheduling); with it, none."""
    m = _example("block_sum")
    args = m.setup((2, 1, 1), (256, 1, 1), np.random.default_rng(1))
    t = launch(m.block_sum_warp_unsynced, 2, 256, *args)
    assert m.check(args) < 1e-3  # lock-step simulation still adds up right; the report is what warns
    src = open(m.__file__).read().splitlines()
    start = next(i for i, x in enumerate(src) if "idiom: no __syncwarp()" in x)
    line = next(i + 1 for i in range(start, len(src)) if "s[tid] += s[tid + stride]" in src[i])
    assert {(h.kind, h.line, h.other_line) for h in t.hazards} == {("RAW", line, line)}
    for h in t.hazards:
        for ex in h.examples:  # every pair is inside warp 0
            assert ex["thread"][0] < 32 and ex["other_thread"][0] < 32
    args = m.setup((2, 1, 1), (256, 1, 1), np.random.default_rng(1))
    t = launch(m.block_sum_warp_sync, 2, 256, *args)
    assert t.hazards == [] and m.check(args) < 1e-3


def test_syncwarp_does_not_order_two_warps():
    from tilewise.sim import syncwarp

    @kernel
    def k(out):
        s = shared(64, float32)
        tid = threadIdx.x
        s[tid] = tid * 1.0
        syncwarp()
        out[tid] = s[tid ^ 1]  # a lane of the same warp: ordered by the syncwarp
        syncwarp()
        out[tid] = s[(tid + 32) % 64]  # a lane of the other warp: a race, syncwarp or not

    out = np.zeros(64, np.float32)
    t = launch(k, 1, 64, out)
    assert {h.kind for h in t.hazards} == {"RAW"}
    (h,) = t.hazards
    assert all((ex["thread"][0] < 32) != (ex["other_thread"][0] < 32) for ex in h.examples)
