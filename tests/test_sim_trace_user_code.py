"""`tilewise trace` on buggy user files: the import, setup(), the launch and check() run under one time
limit; anything the user's code raises (BaseException and SystemExit included) is one line
`FILE:LINE: ...` and exit 2; what the file declares (GRID, SHARED_BYTES, setup()'s arrays, check()'s
error) is checked before it is used, and errors name the file's own names, not the command's options."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tilewise.cli import main
from tilewise.errors import InputError
from tilewise.sim.cli import run_file

HEADER = "import numpy as np\nfrom tilewise.sim import kernel, threadIdx, shared\n"
KERNEL = """
@kernel
def k(x, n):
    x[threadIdx.x] = 1.0
"""
SETUP = """
def setup(grid, block, rng):
    return (np.zeros(32, np.float32), 32)
"""


def write(tmp_path, *parts: str) -> str:
    p = tmp_path / "user.py"
    p.write_text(HEADER + "".join(textwrap.dedent(x) for x in parts))
    return str(p)


def trace(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["trace", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def line_of(path: str, needle: str) -> int:
    """The 1-based line of `needle` in the file, counted here (not taken from the error)."""
    for i, text in enumerate(open(path).read().splitlines(), 1):
        if needle in text:
            return i
    raise AssertionError(needle)


@pytest.mark.parametrize(
    "where, body",
    [
        ("module", "\nwhile True:\n    pass\n" + KERNEL + SETUP),
        ("setup", KERNEL + "\ndef setup(grid, block, rng):\n    while True:\n        pass\n"),
        ("check", KERNEL + SETUP + "\ndef check(args, blocks):\n    while True:\n        pass\n"),
        ("sleep", "\nimport time\ntime.sleep(3600)\n" + KERNEL + SETUP),
    ],
)
def test_endless_user_code_stops_at_the_time_limit(tmp_path, capsys, where, body):
    path = write(tmp_path, body)
    t0 = time.perf_counter()
    rc, _, err = trace(capsys, path, "--time-limit", "0.5")
    took = time.perf_counter() - t0
    line = one_line(err)
    assert rc == 2 and "stopped after 0.5 s" in line and "--time-limit" in line, line
    assert took < 10, f"a 0.5 s limit took {took:.1f} s"  # it hung otherwise
    assert path in line


def test_user_code_that_swallows_the_stop_still_ends(tmp_path):
    # `except BaseException: pass` in a loop catches every stop: the command exits 2 with one line anyway
    path = write(
        tmp_path,
        "\nwhile True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass\n",
    )
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "tilewise.cli", "trace", path, "--time-limit", "0.5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "kept running, so trace exited" in one_line(res.stderr)
    assert time.perf_counter() - t0 < 30


def test_the_limit_is_one_budget_for_the_whole_run(tmp_path, capsys):
    # 0.3 s of setup plus an endless kernel: the launch gets what is left of 0.8 s, not 0.8 s more
    path = write(
        tmp_path,
        "\n@kernel\ndef spin(x, n):\n    while True:\n        pass\n",
        "\nimport time\ndef setup(grid, block, rng):\n    time.sleep(0.3)\n    return (np.zeros(32, np.float32), 32)\n",
    )
    t0 = time.perf_counter()
    rc, _, err = trace(capsys, path, "--time-limit", "0.8", "--max-steps", "100000000")
    took = time.perf_counter() - t0
    line = one_line(err)
    assert rc == 2 and ("stopped after 0.8 s" in line or "longer than" in line), line
    assert took < 5


def test_the_limit_works_off_the_main_thread(tmp_path):
    # run_file from a worker thread (no SIGALRM there): the line-trace fallback stops it
    path = write(tmp_path, "\nwhile True:\n    pass\n" + KERNEL + SETUP)
    result: list[BaseException] = []

    def work():
        try:
            run_file(path, time_limit=0.5)
        except BaseException as e:  # the InputError is the expected outcome
            result.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join(10)
    assert not t.is_alive(), "run_file hung in a worker thread"
    assert isinstance(result[0], InputError) and "stopped after 0.5 s" in str(result[0])


@pytest.mark.parametrize(
    "raise_line, shown",
    [
        ("raise BaseException('deep')", "BaseException: deep"),
        ("raise SystemExit(0)", "SystemExit: the file called sys.exit(0)"),
        ("raise SystemExit('bye')", "SystemExit: the file called sys.exit('bye')"),
        ("raise GeneratorExit", "GeneratorExit"),
    ],
)
@pytest.mark.parametrize("where", ["module", "setup", "check"])
def test_every_exception_from_user_code_is_one_line_with_its_line(tmp_path, capsys, raise_line, shown, where):
    if where == "module":
        path = write(tmp_path, KERNEL + SETUP + "\n" + raise_line + "\n")
    elif where == "setup":
        path = write(tmp_path, KERNEL + "\ndef setup(grid, block, rng):\n    " + raise_line + "\n")
    else:
        path = write(tmp_path, KERNEL + SETUP + "\ndef check(args, blocks):\n    " + raise_line + "\n")
    rc, out, err = trace(capsys, path)
    line = one_line(err)
    assert rc == 2 and shown in line, line  # SystemExit(0) no longer exits 0 with no output
    assert f"{path}:{line_of(path, raise_line)}:" in line


@pytest.mark.parametrize(
    "decl, needle",
    [
        ("GRID = 5", None),  # an int, which launch() accepts: one block row of 5
        ("GRID = (2, 2)", None),
        ("GRID = 'x'", "GRID in {path} must be 1 to 3 positive whole numbers"),
        ("GRID = (0, 1)", "GRID in {path} must be 1 to 3 positive whole numbers"),
        ("GRID = 2.5", "GRID in {path} must be"),
        ("BLOCK = -32", "BLOCK in {path} must be"),
        ("SHARED_BYTES = -4", "SHARED_BYTES must be a whole number of bytes >= 0, got -4"),
        ("SHARED_BYTES = 1.5", "SHARED_BYTES must be a whole number of bytes >= 0, got 1.5"),
        ("TOLERANCE = -1", "TOLERANCE must be a finite number >= 0"),
    ],
)
def test_the_files_declarations_are_checked_and_named(tmp_path, capsys, decl, needle):
    path = write(tmp_path, KERNEL + SETUP + "\n" + decl + "\n" + "\ndef check(args, blocks):\n    return 0.0\n")
    rc, out, err = trace(capsys, path, "--json")
    if needle is None:
        assert rc == 0, err
        assert '"grid"' in out
        return
    line = one_line(err)
    assert rc == 2 and needle.format(path=path) in line, line
    assert "--grid" not in line and "--block" not in line  # the file's own names, not the options


def test_grid_5_in_the_file_launches_5_blocks(tmp_path, capsys):
    path = write(tmp_path, KERNEL + SETUP + "\nGRID = 5\n")
    _, rep = run_file(path)
    assert rep["grid"] == [5, 1, 1] and rep["blocks_simulated"] == 5


def test_a_bad_grid_option_still_names_the_option(tmp_path, capsys):
    path = write(tmp_path, KERNEL + SETUP)
    rc, _, err = trace(capsys, path, "--grid", "0,1")
    assert rc == 2 and "--grid must be" in one_line(err)


@pytest.mark.parametrize(
    "ret, needle",
    [
        ("-5.0", "check() must return the max |error|, a number >= 0, got -5"),
        ("'0.0'", "check() must return the max |error| as a number, got str"),
        ("None", "check() must return the max |error| as a number, got NoneType"),
    ],
)
def test_check_must_return_an_error_magnitude(tmp_path, capsys, ret, needle):
    path = write(tmp_path, KERNEL + SETUP + f"\ndef check(args, blocks):\n    return {ret}\n")
    rc, out, err = trace(capsys, path)
    line = one_line(err)
    assert rc == 2 and needle in line and "ok" not in out, line


@pytest.mark.parametrize(
    "array, dtype",
    [
        ("np.array(['a'] * 32)", "<U1"),
        ("np.array([object()] * 32)", "object"),
        ("np.zeros(32, 'datetime64[s]')", "datetime64[s]"),
    ],
)
def test_setup_arrays_must_hold_numbers(tmp_path, capsys, array, dtype):
    path = write(tmp_path, KERNEL + f"\ndef setup(grid, block, rng):\n    return ({array}, 32)\n")
    rc, _, err = trace(capsys, path)
    line = one_line(err)
    assert rc == 2 and "argument 0 (x) must hold numbers" in line and dtype in line, line


@pytest.mark.parametrize("shape", ["-5", "0", "(4, -1)", "2.5", "'x'", "True"])
def test_shared_arrays_need_a_positive_shape(tmp_path, capsys, shape):
    path = write(
        tmp_path,
        f"\n@kernel\ndef k(x, n):\n    s = shared({shape})\n    x[threadIdx.x] = 1.0\n",
        SETUP,
    )
    rc, _, err = trace(capsys, path)
    line = one_line(err)
    assert rc == 2 and "needs a shape of whole numbers >= 1" in line, line


def test_a_long_message_from_user_code_is_cut(tmp_path, capsys):
    path = write(tmp_path, KERNEL + "\ndef setup(grid, block, rng):\n    raise ValueError('x' * 100_000)\n")
    rc, _, err = trace(capsys, path)
    line = one_line(err)
    assert rc == 2 and len(line) < 1000 and "100,000 characters" in line
