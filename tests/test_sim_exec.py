"""The executor: kernels written in the Python kernel language give numpy's answers."""

import importlib.util
import os
import time

import numpy as np
import pytest
from helpers import assert_close, poisoned

from tilewise.errors import InputError
from tilewise.sim import (
    FULL_MASK,
    atomic_add,
    ballot_sync,
    blockDim,
    blockIdx,
    device,
    dynamic_shared,
    float32,
    kernel,
    launch,
    make_vec,
    shared,
    shfl_down_sync,
    shfl_sync,
    shfl_up_sync,
    shfl_xor_sync,
    syncthreads,
    threadIdx,
    vec,
)

EX = os.path.join(os.path.dirname(__file__), "..", "examples", "sim")


def _example(name):
    spec = importlib.util.spec_from_file_location(f"ex_{name}", os.path.join(EX, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ----------------------------------------------------------------------------- the examples


@pytest.mark.parametrize("kname", ["block_sum", "block_sum_shfl"])
def test_block_sum(rng, kname):
    m = _example("block_sum")
    args = m.setup((5, 1, 1), (256, 1, 1), rng)
    launch(getattr(m, kname), 5, 256, *args)
    assert not np.isnan(args[1]).any()
    assert m.check(args) < 1e-4


def test_gemm_tiled_awkward_shape(rng):
    m = _example("gemm_tiled")
    M, N, K = 45, 37, 70  # not multiples of 32: the zero padding matters
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    C = poisoned((M, N), np.float32)
    t = launch(m.gemm, (2, 2), (32, 32), A, B, C, M, N, K)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    assert_close(C, ref, atol=1e-4 * np.sqrt(K), what="C")
    assert t.hazards == []


def test_gemm_naive(rng):
    m = _example("gemm_naive")
    args = m.setup((2, 1, 1), (32, 8, 1), rng)
    launch(m.gemm_naive, (2, 1), (32, 8), *args)
    assert m.check(args) < 1e-3


@pytest.mark.parametrize("kname", ["transpose_naive", "transpose_padded", "transpose_swizzled"])
def test_transpose(rng, kname):
    m = _example("transpose")
    args = m.setup((3, 2, 1), (32, 8, 1), rng)
    launch(getattr(m, kname), (3, 2), (32, 8), *args)
    assert m.check(args) == 0.0


@pytest.mark.parametrize("kname", ["divergent", "divergent_select"])
def test_divergent(rng, kname):
    m = _example("divergent")
    args = m.setup((2, 1, 1), (256, 1, 1), rng)
    launch(getattr(m, kname), 2, 256, *args)
    assert m.check(args) < 1e-5


def test_speed_one_tiled_gemm_block(rng):
    """A target: one 1024-thread block of the 32x32 tiled GEMM, K = 256, under 2 s on one core."""
    m = _example("gemm_tiled")
    args = m.setup((1, 1, 1), (32, 32, 1), rng)
    t0 = time.perf_counter()
    launch(m.gemm, (1, 1), (32, 32), *args)
    assert time.perf_counter() - t0 < 2.0
    assert m.check(args) < 1e-3


# ----------------------------------------------------------------------------- control flow


@kernel
def k_collatz(x, steps, n):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i >= n:
        return
    v = x[i]
    c = 0
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        c += 1
    steps[i] = c


def test_while_per_thread_trip_counts(rng):
    n = 70  # 3 warps, the last one partial; 2 blocks of 48 threads (not a multiple of 32)
    x = rng.integers(1, 200, n).astype(np.int64)
    steps = np.full(n, -1, dtype=np.int64)
    t = launch(k_collatz, 2, 48, x, steps, n)

    def ref(v):
        c = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            c += 1
        return c

    assert steps.tolist() == [ref(int(v)) for v in x]
    # the loop body runs at less than 100% of lanes: the warp waits for its slowest thread
    assert any(lanes < 32 * inst for inst, lanes in t.lines.values())


@kernel
def k_break_continue(x, out, n):
    i = threadIdx.x
    s = 0
    for k in range(n):
        if k == x[i]:
            break
        if k % 3 == 0:
            continue
        s += k
    out[i] = s


def test_divergent_break_continue(rng):
    x = rng.integers(0, 40, 64).astype(np.int64)
    out = np.full(64, -1, dtype=np.int64)
    launch(k_break_continue, 1, 64, x, out, 30)
    ref = [sum(k for k in range(min(int(v), 30)) if k % 3) for v in x]
    assert out.tolist() == ref


@kernel
def k_vector_range(lo, hi, out):
    i = threadIdx.x
    s = 0.0
    for k in range(lo[i], hi[i], 2):
        s += k
    out[i] = s
    j = i * 2 if i % 3 == 0 else -i  # a per-thread conditional expression
    a, b = j, i + 1
    if 5 <= i < 20 and not i == 7:
        out[i] = out[i] + a * 0 + b * 0 + 1000.0


def test_vector_range_ifexp_chained_compare():
    lo = np.arange(40, dtype=np.int64) % 7
    hi = lo + np.arange(40, dtype=np.int64) % 11
    out = np.zeros(40)
    launch(k_vector_range, 1, 40, lo, hi, out)
    ref = np.array([sum(range(a, b, 2)) for a, b in zip(lo, hi)], dtype=float)
    sel = [(5 <= i < 20 and i != 7) for i in range(40)]
    ref[sel] += 1000.0
    np.testing.assert_array_equal(out, ref)


@kernel
def k_guarded(x, y, n):
    i = threadIdx.x
    # short-circuit: x[i] is never read where i >= n
    if i < n and x[i] > 0:
        y[i] = 1.0
    y2 = x[i] if i < n else -1.0
    if i < n:
        y[i] = y[i] + y2 * 0
    # a vector condition with all lanes equal is an ordinary branch
    if i >= 0:
        pass


def test_short_circuit_and_predicated_loads_do_not_go_out_of_bounds(rng):
    x = rng.standard_normal(20).astype(np.float32)
    y = np.zeros(20, dtype=np.float32)
    t = launch(k_guarded, 1, 32, x, y, 20)
    assert t.hazards == []
    np.testing.assert_array_equal(y, (x > 0).astype(np.float32))


@device
def warp_reduce(v):
    off = 16
    while off > 0:
        v += shfl_down_sync(FULL_MASK, v, off)
        off >>= 1
    return v


@kernel
def k_shuffles(x, down, up, xo, idx, red, bal):
    i = threadIdx.x
    v = x[i]
    down[i] = shfl_down_sync(FULL_MASK, v, 3)
    up[i] = shfl_up_sync(FULL_MASK, v, 5, 16)
    xo[i] = shfl_xor_sync(FULL_MASK, v, 6)
    idx[i] = shfl_sync(FULL_MASK, v, 7)
    red[i] = warp_reduce(v)
    bal[i] = ballot_sync(FULL_MASK, v > 0)


def test_shuffles(rng):
    n = 64
    x = rng.standard_normal(n)
    outs = [np.zeros(n) for _ in range(5)] + [np.zeros(n, dtype=np.int64)]
    launch(k_shuffles, 1, n, x, *outs)
    down, up, xo, idx, red, bal = outs
    lane = np.arange(n) % 32
    base = np.arange(n) - lane
    np.testing.assert_array_equal(down, np.where(lane + 3 < 32, x[np.minimum(np.arange(n) + 3, n - 1)], x))
    seg = lane % 16
    np.testing.assert_array_equal(up, np.where(seg >= 5, x[np.arange(n) - 5], x))
    np.testing.assert_array_equal(xo, x[base + (lane ^ 6)])
    np.testing.assert_array_equal(idx, x[base + 7])
    assert_close(red[lane == 0], x.reshape(2, 32).sum(axis=1), atol=1e-5, rtol=1e-6, what="warp sums")
    bits = [sum(1 << j for j in range(32) if x[w * 32 + j] > 0) for w in range(2)]
    assert bal[0] == bits[0] and bal[40] == bits[1]


@kernel
def k_hist(x, h, n):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        atomic_add(h, x[i], 1)


def test_atomic_histogram(rng):
    x = rng.integers(0, 10, 300).astype(np.int64)
    h = np.zeros(10, dtype=np.int64)
    launch(k_hist, 3, 128, x, h, 300)
    np.testing.assert_array_equal(h, np.bincount(x, minlength=10))


@kernel
def k_vec_copy(x, y, n4):
    i = blockIdx.x * blockDim.x + threadIdx.x
    x4 = vec(x, 4)
    y4 = vec(y, 4)
    if i < n4:
        v = x4[i]
        y4[i] = make_vec(v.w, v.z, v.y, v.x)


def test_float4_loads_and_stores(rng):
    x = rng.standard_normal(4 * 100).astype(np.float32)
    y = poisoned(x.shape, x.dtype)
    t = launch(k_vec_copy, 2, 64, x, y, 100)
    np.testing.assert_array_equal(y.reshape(-1, 4), x.reshape(-1, 4)[:, ::-1])
    ld = [s for s in t.sites.values() if s.op == "ld"][0]
    assert ld.width == 16
    assert ld.counts["sectors"] == 100 * 16 // 32  # 16 B per lane, fully used sectors


@kernel
def k_dyn(x, y):
    s = dynamic_shared(float32)
    t = shared((4, 8), float32)
    i = threadIdx.x
    s[i] = x[i]
    t[i // 8][i % 8] = x[i] * 2
    syncthreads()
    y[i] = s[blockDim.x - 1 - i] + t[(31 - i) // 8][(31 - i) % 8]


def test_dynamic_and_2d_shared(rng):
    x = rng.standard_normal(32).astype(np.float32)
    y = np.zeros(32, dtype=np.float32)
    t = launch(k_dyn, 1, 32, x, y, shared_bytes=32 * 4)
    assert_close(y, x[::-1] * 3, atol=0, rtol=1e-6, what="y")
    assert t.hazards == []


@kernel
def k_3d(out):
    i = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y
    b = blockIdx.x + blockIdx.y * 2
    out[b * 60 + i] = threadIdx.z * 100 + threadIdx.y * 10 + threadIdx.x


def test_3d_block_and_2d_grid():
    out = np.full(4 * 60, -1, dtype=np.int64)
    launch(k_3d, (2, 2), (5, 4, 3), out)
    z, y, x = np.meshgrid(range(3), range(4), range(5), indexing="ij")
    ref = (z * 100 + y * 10 + x).ravel()
    np.testing.assert_array_equal(out.reshape(4, 60), np.tile(ref, (4, 1)))


def test_sample_runs_a_subset(rng):
    m = _example("transpose")
    args = m.setup((4, 4, 1), (32, 8, 1), rng)
    t = launch(m.transpose_padded, (4, 4), (32, 8), *args, sample=3)
    assert len(t.blocks_simulated) == 3
    assert np.isnan(args[1]).sum() == (16 - 3) * 32 * 32


# ----------------------------------------------------------------------------- errors


def test_bad_launches():
    x = np.zeros(8, dtype=np.float32)
    with pytest.raises(InputError, match="at most 1024"):
        launch(k_dyn, 1, (32, 33), x, x)
    with pytest.raises(InputError, match="grid"):
        launch(k_dyn, (0, 1), 32, x, x)
    with pytest.raises(InputError, match="C-contiguous"):
        launch(k_dyn, 1, 32, np.zeros((8, 8), np.float32)[:, ::2], x)
    with pytest.raises(InputError, match="shared_bytes"):
        launch(k_dyn, 1, 32, x, x, shared_bytes=-1)
    with pytest.raises(InputError, match="launch"):
        k_dyn(x, x)


@kernel
def k_float_index(x):
    x[threadIdx.x * 0.5] = 1.0


@kernel
def k_big_static(x):
    s = shared(13000, float32)
    s[threadIdx.x] = 1.0


def test_bad_kernels():
    x = np.zeros(64, dtype=np.float32)
    with pytest.raises(InputError, match="integer"):
        launch(k_float_index, 1, 32, x)
    with pytest.raises(InputError, match="48 KB"):
        launch(k_big_static, 1, 32, x)


@kernel
def k_builtins(x, y):
    i = threadIdx.x
    v = x[i]
    y[i] = max(min(v, 1.0), -1.0) + int(v * 2) * 0 + abs(float(i)) * 0


def test_python_builtins_are_elementwise(rng):
    x = (rng.standard_normal(32) * 3).astype(np.float32)
    y = np.zeros(32, dtype=np.float32)
    launch(k_builtins, 1, 32, x, y)
    np.testing.assert_array_equal(y, np.clip(x, -1, 1))


@kernel
def k_float4_shared(x, y):
    s = shared(128, float32)
    s4 = vec(s, 4)
    i = threadIdx.x
    s[i] = x[i]
    syncthreads()
    v = s4[i % 8]  # every quarter-warp reads the same 128 bytes
    b = s4[0]  # a 16-byte broadcast
    y[i] = v.x + b.y


def test_float4_shared_loads_follow_the_measured_phases(rng):
    x = rng.standard_normal(128).astype(np.float32)
    y = np.zeros(128, dtype=np.float32)
    t = launch(k_float4_shared, 1, 128, x, y)
    np.testing.assert_array_equal(y, x.reshape(-1, 4)[np.arange(128) % 8, 0] + x[1])
    by = {s.text: s.counts for s in t.sites.values()}
    assert by["s4[i % 8]"]["wavefronts"] == 4 * 4 and by["s4[i % 8]"]["bank_conflicts"] == 0
    assert by["s4[0]"]["wavefronts"] == 2 * 4 and by["s4[0]"]["broadcasts"] == 4


@kernel
def k_nested(x, out):
    i = threadIdx.x
    v = x[i]
    s = 0
    if v % 3 != 0:
        k = 0
        while True:
            k += 1
            if k > v:
                break
            if k % 5 == 4:
                continue
            if k == 17:
                out[i] = -1
                return  # these threads leave the kernel from inside the loop
            s += k
    else:
        s = 1000
    out[i] = s


def test_nested_divergent_loops_with_return_break_continue():
    x = np.arange(64, dtype=np.int64)
    out = np.zeros(64, dtype=np.int64)
    launch(k_nested, 1, 64, x, out)

    def ref(v):
        if v % 3 == 0:
            return 1000
        s = 0
        for k in range(1, v + 1):
            if k % 5 == 4:
                continue
            if k == 17:
                return -1
            s += k
        return s

    assert out.tolist() == [ref(int(v)) for v in x]


@device
def bad_device(v):
    if v > 0:
        return v
    return -v


@kernel
def k_calls_bad_device(x):
    x[threadIdx.x] = bad_device(x[threadIdx.x])


def test_device_return_inside_branch_is_refused():
    with pytest.raises(InputError, match="return only at its end"):
        launch(k_calls_bad_device, 1, 32, np.ones(32))
