"""`tilewise trace` and the simulator on bad input: one line naming file and line, exit 2;
endless kernels stopped; --sample on a huge grid cheap; a result check that fails or is impossible
exits non-zero with strict JSON; analyze_access refuses ragged input."""

from __future__ import annotations

import json
import os
import textwrap
import time

import numpy as np
import pytest

from tilewise.cli import main
from tilewise.errors import InputError
from tilewise.sim import analyze_access, kernel, launch, shared_passes, threadIdx
from tilewise.sim.lazy import PAGE, LazyArray, normal, poisoned
from tilewise.sim.runtime import sample_blocks

EX = os.path.join(os.path.dirname(__file__), "..", "examples", "sim")
GEMM = os.path.join(EX, "gemm_tiled.py")

HEADER = "import numpy as np\nfrom tilewise.sim import kernel, threadIdx, blockIdx\n"


def _file(tmp_path, *parts: str, name: str = "user.py") -> str:
    p = tmp_path / name
    p.write_text(HEADER + "".join(textwrap.dedent(part) for part in parts))
    return str(p)


def _trace(capsys, *argv):
    rc = main(["trace", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got:\n{err}"
    assert "Traceback" not in err
    assert lines[0].startswith("tilewise: error: ")
    return lines[0]


def strict_json(text: str):
    def refuse(const):
        raise AssertionError(f"non-strict JSON constant {const}")

    return json.loads(text, parse_constant=refuse)


SETUP = """
def setup(grid, block, rng):
    return (np.zeros(64, np.float32), 64)
"""


def test_negative_seed_is_one_line(capsys):
    rc, _, err = _trace(capsys, GEMM, "--grid", "1,1", "--seed", "-1")
    assert rc == 2
    assert "--seed must be an integer >= 0, got -1" in _one_line_error(err)


def test_syntax_error_names_file_and_line(tmp_path, capsys):
    path = _file(tmp_path, "@kernel\ndef k(x, n):\n    x[0] = = 1\n" + SETUP)
    rc, _, err = _trace(capsys, path)
    line = _one_line_error(err)
    assert rc == 2
    assert f"{path}:5:" in line and "SyntaxError" in line  # line 5: two header lines, then the kernel


def test_undefined_name_at_import_names_file_and_line(tmp_path, capsys):
    path = _file(tmp_path, "y = undefined_thing + 1\n" + SETUP)
    rc, _, err = _trace(capsys, path)
    line = _one_line_error(err)
    assert rc == 2 and f"{path}:3:" in line and "NameError" in line and "undefined_thing" in line


def test_kernel_that_raises_names_its_line(tmp_path, capsys):
    path = _file(
        tmp_path,
        """
        @kernel
        def k(x, n):
            i = threadIdx.x
            x[i] = 1.0 / 0
        """,
        SETUP,
    )
    rc, _, err = _trace(capsys, path, "--block", "64")
    line = _one_line_error(err)
    assert rc == 2 and f"{path}:7:" in line and "in kernel k" in line and "ZeroDivisionError" in line


def test_kernel_with_an_undefined_name(tmp_path, capsys):
    path = _file(
        tmp_path,
        """
        @kernel
        def k(x, n):
            x[threadIdx.x] = no_such_value
        """,
        SETUP,
    )
    rc, _, err = _trace(capsys, path, "--block", "64")
    line = _one_line_error(err)
    assert rc == 2 and f"{path}:6:" in line and "NameError" in line and "no_such_value" in line


@pytest.mark.parametrize(
    "setup_body,expect",
    [
        ("    raise RuntimeError('no data here')\n", ["in setup()", "RuntimeError: no data here", ":8:"]),
        ("    return 5\n", ["setup() must return a tuple of the kernel's arguments, got int"]),
        ("    return {'x': 1}\n", ["setup() must return a tuple", "got dict"]),
        ("    return (np.zeros(4),)\n", ["setup() returned 1 arguments for kernel k, which takes 2"]),
        ("    return ('a', 64)\n", ["argument 0 (x) must be a numpy array or a number, got str"]),
    ],
)
def test_setup_errors_are_one_line(tmp_path, capsys, setup_body, expect):
    path = _file(
        tmp_path,
        "@kernel\ndef k(x, n):\n    x[threadIdx.x] = 1.0\n\ndef setup(grid, block, rng):\n" + setup_body,
    )
    rc, _, err = _trace(capsys, path)
    line = _one_line_error(err)
    assert rc == 2
    for e in expect:
        assert e in line, line
    assert path in line


def test_check_that_raises_is_one_line(tmp_path, capsys):
    path = _file(
        tmp_path,
        "@kernel\ndef k(x, n):\n    x[threadIdx.x] = 1.0\n"
        + SETUP
        + "\ndef check(args, blocks):\n    return args[5]\n",
    )
    rc, _, err = _trace(capsys, path)
    line = _one_line_error(err)
    assert rc == 2 and "in check()" in line and "IndexError" in line and f"{path}:11:" in line


ENDLESS = """
@kernel
def spin(x, n):
    i = threadIdx.x
    while i < n:
        x[i] = 0.0
"""


def test_endless_kernel_stops_at_the_step_limit(tmp_path, capsys):
    path = _file(tmp_path, ENDLESS + SETUP)
    t0 = time.perf_counter()
    rc, _, err = _trace(capsys, path, "--block", "64", "--max-steps", "2000")
    assert time.perf_counter() - t0 < 5
    line = _one_line_error(err)
    assert rc == 2 and "more than 2,000 steps" in line
    assert "kernel spin, block (0, 0, 0), line 7" in line or "kernel spin, block (0, 0, 0), line 8" in line


def test_endless_kernel_stops_with_the_default_limit_in_seconds(tmp_path, capsys):
    path = _file(tmp_path, "@kernel\ndef spin(x, n):\n    while True:\n        pass\n" + SETUP)
    t0 = time.perf_counter()
    rc, _, err = _trace(capsys, path)
    took = time.perf_counter() - t0
    assert rc == 2 and "an endless loop?" in _one_line_error(err)
    assert took < 15, f"the default step limit took {took:.1f} s"


def test_time_limit_stops_a_launch():
    @kernel
    def spin(x, n):
        i = threadIdx.x
        for _ in range(10**12):
            x[i] = 0.0

    t0 = time.perf_counter()
    with pytest.raises(InputError, match="longer than 0.3 s"):
        launch(spin, 1, 32, np.zeros(32, np.float32), 32, max_steps=None, time_limit=0.3)
    assert time.perf_counter() - t0 < 3


@pytest.mark.parametrize("bad", [dict(max_steps=0), dict(max_steps=1.5), dict(time_limit=-1)])
def test_limits_are_validated(bad):
    @kernel
    def k(x, n):
        x[threadIdx.x] = 1.0

    with pytest.raises(InputError):
        launch(k, 1, 32, np.zeros(32, np.float32), 32, **bad)


def test_grid_beyond_cuda_limits_is_refused_before_setup(capsys):
    t0 = time.perf_counter()
    rc, _, err = _trace(capsys, GEMM, "--grid", "100000,100000", "--sample", "1")
    assert time.perf_counter() - t0 < 5
    assert rc == 2 and "grid must be at most (2147483647, 65535, 65535)" in _one_line_error(err)


def test_sample_of_a_huge_grid_builds_only_what_it_touches(capsys):
    t0 = time.perf_counter()
    rc, out, err = _trace(capsys, GEMM, "--grid", "100000,65535", "--sample", "1", "--json")
    assert time.perf_counter() - t0 < 20
    assert rc == 0, err
    r = strict_json(out)
    assert r["blocks_total"] == 100000 * 65535 and r["blocks_simulated"] == 1
    assert r["check"]["ok"] and r["check"]["max_abs_error_vs_numpy"] < 1e-3
    # the one block reads 32 rows of A (32 x 256 floats) and 32 columns of B: 2 x 32 KB, the minimum
    assert r["totals"]["global_bytes_minimum"] == 2 * 32 * 256 * 4 + 32 * 32 * 4


def test_lazy_inputs_make_only_touched_pages():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gemm_tiled_lazy", GEMM)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    grid = (100000, 65535, 1)
    args = mod.setup(grid, (32, 32, 1), np.random.default_rng(0))
    A, B, C = args[:3]
    assert all(isinstance(a, LazyArray) for a in (A, B, C))
    tr = launch(mod.gemm, grid, (32, 32), *args, sample=1)
    assert len(tr.blocks_simulated) == 1
    # A: 32 rows of 256 = 2 pages; B: 256 rows, one page each; C: 32 rows, one page each
    assert A.pages_made <= 3 and B.pages_made <= 2 * 256 and C.pages_made <= 2 * 32
    assert mod.check(args, tr.blocks_simulated) < 1e-3


def test_block_16_is_refused_plainly(capsys):
    rc, out, err = _trace(capsys, GEMM, "--block", "16,16", "--json")
    assert rc == 2 and out == ""
    assert "needs --block 32,32" in _one_line_error(err)


UNWRITTEN = """
@kernel
def half(x, n):
    i = threadIdx.x
    if i < 32:
        x[i] = 1.0

def setup(grid, block, rng):
    return (np.full(64, np.nan, np.float32), 64)

def check(args, blocks):
    return float(np.max(np.abs(args[0] - 1.0)))
"""


def test_nan_result_check_fails_with_strict_json(tmp_path, capsys):
    path = _file(tmp_path, UNWRITTEN)
    rc, out, err = _trace(capsys, path, "--block", "64", "--json")
    assert rc == 1
    r = strict_json(out)
    assert r["check"]["ok"] is False and r["check"]["max_abs_error_vs_numpy"] is None
    assert "never written" in r["check"]["problem"]
    assert "result check failed" in err and "impossible" in err
    rc, out, err = _trace(capsys, path, "--block", "64")
    assert rc == 1 and "result check:" not in out and "= nan" not in out


def test_wrong_result_fails(tmp_path, capsys):
    path = _file(tmp_path, UNWRITTEN.replace("x[i] = 1.0", "x[i] = 1.0\n    else:\n        x[i] = 1.5"))
    rc, _, err = _trace(capsys, path, "--block", "64")
    assert rc == 1 and "max |error| vs numpy = 0.5 > tolerance 0.001" in err
    path = _file(
        tmp_path, UNWRITTEN.replace("x[i] = 1.0", "x[i] = 1.0\n    else:\n        x[i] = 1.5") + "TOLERANCE = 1\n"
    )
    rc, out, _ = _trace(capsys, path, "--block", "64")
    assert rc == 0 and "(tolerance 1): ok" in out


def test_every_example_gives_strict_json_and_passes_its_check(capsys):
    for name in sorted(os.listdir(EX)):
        if not name.endswith(".py"):
            continue
        rc, out, err = _trace(capsys, os.path.join(EX, name), "--json")
        assert rc == 0, (name, err)
        r = strict_json(out)
        assert r["blocks_simulated"] >= 1


@pytest.mark.parametrize(
    "addresses,width,active",
    [
        ([[1, 2], [3]], 4, None),
        ([[0] * 32, [4]], 4, None),
        ([object()] * 32, 4, None),
        ([2**70] * 32, 4, None),
        (list(range(0, 128, 4)), [4], None),
        (list(range(0, 128, 4)), True, None),
        (list(range(0, 128, 4)), 4, [[True], [False]]),
        (list(range(0, 128, 4)), 4, [True, [False]]),
    ],
)
def test_analyze_access_refuses_malformed_input(addresses, width, active):
    with pytest.raises(InputError):
        analyze_access(addresses, width, "global", active=active)
    with pytest.raises(InputError):
        shared_passes(addresses, width, active=active)


def test_sample_blocks_of_a_huge_grid_is_cheap_and_spread():
    t0 = time.perf_counter()
    b = sample_blocks((2**31 - 1, 65535, 65535), 3)
    assert time.perf_counter() - t0 < 1
    assert b[0] == (0, 0, 0) and b[-1] == (2**31 - 2, 65534, 65534) and len(b) == 3
    assert sample_blocks((4, 2, 1), None) == [(x, y, 0) for y in range(2) for x in range(4)]


def test_lazy_array_is_deterministic_and_indexes_like_numpy():
    rng = np.random.default_rng(3)
    a = LazyArray((5, 3 * PAGE // 5 + 7), np.float32, lambda p, n: np.arange(p * PAGE, p * PAGE + n))
    dense = np.arange(a.size, dtype=np.float32).reshape(a.shape)
    np.testing.assert_array_equal(a.to_numpy(), dense)
    np.testing.assert_array_equal(a[1:4, 10:20], dense[1:4, 10:20])
    np.testing.assert_array_equal(a[2], dense[2])
    flat = a.reshape(-1)
    idx = rng.integers(0, a.size, 100)
    np.testing.assert_array_equal(flat[idx], dense.reshape(-1)[idx])
    flat[idx] = -1.0
    dense.reshape(-1)[idx] = -1.0
    np.testing.assert_array_equal(a.to_numpy(), dense)  # the view shares pages
    with pytest.raises(IndexError):
        flat[np.array([a.size])]
    big = normal((1 << 13, 1 << 12), np.float32, np.random.default_rng(1))
    again = normal((1 << 13, 1 << 12), np.float32, np.random.default_rng(1))
    assert isinstance(big, LazyArray)
    np.testing.assert_array_equal(big[7, :5], again[7, :5])
    assert 0.5 < float(np.std(big[100:110, :])) < 1.5
    c = poisoned((1 << 13, 1 << 12), np.int32)
    assert int(c[3, 3]) == np.iinfo(np.int32).min and c.pages_made == 1
    small = normal((3, 4), np.float32, np.random.default_rng(1))
    np.testing.assert_array_equal(small, np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32))


@pytest.mark.parametrize("flag,value", [("--max-steps", "0"), ("--time-limit", "nan"), ("--time-limit", "-1")])
def test_limit_flags_are_validated(capsys, flag, value):
    rc, _, err = _trace(capsys, GEMM, "--grid", "1,1", flag, value)
    assert rc == 2 and flag in _one_line_error(err)


def _double_first(a):
    """A plain helper (not rewritten by @kernel): its `a[...]` goes through the array's own load / store."""
    a[0] = a[0] * 2.0


def test_array_access_outside_rewritten_code_runs_on_its_launch_and_only_during_it():
    kept = []

    @kernel
    def k(a):
        kept.append(a)
        if threadIdx.x == 0:
            _double_first(a)

    x = np.array([1.5, 3.0], dtype=np.float32)
    launch(k, 1, 32, x)
    assert x.tolist() == [3.0, 3.0]  # the device function's load and store ran on the launch's executor
    with pytest.raises(InputError, match="inside a @kernel function run by launch"):
        kept[0][0]  # the launch is over


def test_the_executor_defines_every_method_its_mixins_call_on_each_other():
    """sim.state.LaunchState names the methods one mixin of the executor calls on another; each must be
    defined by a class before it in the executor's method order (its own bodies only raise)."""
    from tilewise.sim.runtime import Executor
    from tilewise.sim.state import LaunchState

    stubs = {n: f for n, f in vars(LaunchState).items() if callable(f) and not n.startswith("__")}
    assert {"record", "touch", "index", "tick", "check_limits", "load", "store"} <= set(stubs)
    for name, stub in stubs.items():
        assert getattr(Executor, name) is not stub, name
    assert Executor.__mro__.index(LaunchState) == len(Executor.__mro__) - 2  # just before object
