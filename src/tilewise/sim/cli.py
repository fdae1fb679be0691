"""`tilewise trace FILE`: run a Python CUDA-style kernel through the warp simulator, print the per-line report."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from tilewise.errors import InputError, cli_int, clip, fraction, positive_int, shown
from tilewise.sim.lazy import LazyArray
from tilewise.sim.report import render_text, report
from tilewise.sim.runtime import MAX_STEPS, Device, Kernel, Trace, launch, launch_shape

EPILOG = """examples:
  tilewise trace examples/sim/gemm_tiled.py --grid 4,4 --block 32,32
  tilewise trace examples/sim/gemm_tiled.py --grid 16,16 --block 32,32 --sample 4 --json
  tilewise trace examples/sim/block_sum.py --kernel block_sum_shfl

The file defines one or more @kernel functions and setup(grid, block, rng) -> launch arguments;
optionally check(args, blocks) -> max |error| against numpy (the command exits 1 when it is above
TOLERANCE, default 1e-3, or NaN), GRID, BLOCK and SHARED_BYTES. An error in the file's own code is
reported as one line, FILE:LINE; a block running more than --max-steps statements is stopped, and the
whole run (the file's import, setup(), the launch and check()) more than --time-limit seconds.
"""


def _dims(name: str, text: object) -> tuple[int, ...] | None:
    """Launch dimensions from '4,4', 4, (4, 4) or [4, 4, 1]; `name` is what the user wrote ('--grid' or
    'GRID in FILE'), so the message names it."""
    if text is None:
        return None
    expected = f"{name} must be 1 to 3 positive whole numbers such as 4,4 or (4, 4)"
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        parts: list[object] = [text]
    elif isinstance(text, (tuple, list)):
        parts = list(text)
    elif isinstance(text, str):
        parts = [x for x in text.replace("x", ",").split(",") if x.strip()]
    else:
        raise InputError(f"{expected}, got {shown(text)}")
    t = []
    for x in parts:
        if isinstance(x, bool):
            raise InputError(f"{expected}, got {shown(text)}")
        try:
            v = int(x) if isinstance(x, (str, int, np.integer)) else None
        except ValueError:
            v = None
        if v is None or v < 1:
            raise InputError(f"{expected}, got {shown(text)}")
        t.append(v)
    if not 1 <= len(t) <= 3:
        raise InputError(f"{expected}, got {shown(text)}")
    return tuple(t) + (1,) * (3 - len(t))


def _where(tb: Any, path: str) -> int | None:
    """The line of the innermost traceback frame in the user's file, if any."""
    line = None
    target = os.path.realpath(path)
    while tb is not None:
        if os.path.realpath(tb.tb_frame.f_code.co_filename) == target:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def user_error(path: str, what: str, err: BaseException) -> InputError:
    """One line for an error in the user's file: `FILE:LINE: in WHAT: Type: message`.

    Set TILEWISE_TRACEBACK=1 to see the whole traceback instead (for a bug in tilewise itself).
    """
    if isinstance(err, SyntaxError) and os.path.realpath(err.filename or "") == os.path.realpath(path):
        line = err.lineno
    else:
        line = _where(err.__traceback__, path)
    at = f"{path}:{line}" if line else path
    text = _text_of(err)
    msg = clip(text.splitlines()[0]) if text.strip() else ""
    if isinstance(err, SystemExit):
        msg = f"the file called sys.exit({shown(err.code)}), which trace cannot return from"
    return InputError(f"{at}: in {what}: {type(err).__name__}{': ' + msg if msg else ''}")


def _text_of(err: BaseException) -> str:
    try:
        return str(err)
    except Exception:  # a user exception whose __str__ itself raises
        return ""


class RunTimeout(BaseException):
    """Raised inside the user's code when the run's time limit passes (a BaseException, so that a bare
    `except Exception` in the user's file does not swallow it)."""


DEFAULT_TIME_LIMIT = 60.0  # seconds for the whole run; the examples take 0.1-3 s on a 2-core machine
SWALLOWED_S = 2.0  # past the limit by this much, the stop was caught by the user's code: the CLI exits


class _Deadline:
    """One time limit for the file's import, setup(), the launch and check().

    On POSIX in the main thread a SIGALRM interval timer raises `RunTimeout` in whatever Python code is
    running (an endless `while True` at module level included), and fires again every 0.2 s so that a
    user's `except BaseException: pass` cannot swallow it for good. Elsewhere (a worker thread) a trace
    function checks the clock on every line of the user's code instead.
    """

    def __init__(self, seconds: float, path: str = "", hard_exit: bool = False):
        self.seconds = seconds
        self.path = path
        self.hard_exit = hard_exit  # the CLI: exit the process if the user's code swallows the stop
        self.end = time.perf_counter() + seconds
        self._alarm = False
        self._old_handler: object = None
        self._old_trace: object = False  # False: no trace function of ours is installed

    def remaining(self) -> float:
        return max(self.end - time.perf_counter(), 1e-3)

    def _fire(self, *_: object) -> None:
        if self.hard_exit and time.perf_counter() > self.end + SWALLOWED_S:
            # The user's code caught RunTimeout and went on (`except BaseException: pass` in a loop): the
            # command line cannot get control back any other way. Say so in one line and exit 2.
            sys.stderr.write(
                f"tilewise: error: {self.path}: stopped after {self.seconds:g} s, the run's time limit; the file's "
                "code caught the stop (a bare except?) and kept running, so trace exited\n"
            )
            sys.stderr.flush()
            os._exit(2)
        raise RunTimeout

    def _tracer(self, frame: Any, event: str, arg: Any) -> Any:
        if time.perf_counter() > self.end:
            raise RunTimeout
        return self._tracer

    def __enter__(self) -> _Deadline:
        if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
            self._old_handler = signal.signal(signal.SIGALRM, self._fire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds, 0.2)
            self._alarm = True
        else:
            self._old_trace = sys.gettrace()
            sys.settrace(self._tracer)
        return self

    def disarm(self) -> None:
        """Stop the timer (once it has fired: the error is on its way and must not be interrupted)."""
        if self._alarm:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, self._old_handler)  # type: ignore[arg-type]
            self._alarm = False
        elif self._old_trace is not False:
            sys.settrace(self._old_trace)  # type: ignore[arg-type]
            self._old_trace = False

    def __exit__(self, *exc: object) -> None:
        self.disarm()


_LIMIT: _Deadline | None = None  # the deadline of the run in progress, for the messages


def _guarded(path: str, what: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """Run a piece of the user's file; anything it raises, BaseException and SystemExit included, becomes
    one InputError line naming file and line (Ctrl-C still stops the command)."""
    try:
        return fn(*args, **kw)
    except (InputError, KeyboardInterrupt):
        raise
    except RunTimeout as e:
        if _LIMIT is not None:
            _LIMIT.disarm()
        limit = _LIMIT.seconds if _LIMIT is not None else DEFAULT_TIME_LIMIT
        line = _where(e.__traceback__, path)
        at = f"{path}:{line}" if line else path
        raise InputError(
            f"{at}: in {what}: stopped after {limit:g} s, the run's time limit (an endless loop?); "
            "allow more with --time-limit"
        ) from None
    except BaseException as e:  # the user's own code: anything it raises is theirs to fix, shown in one line
        if os.environ.get("TILEWISE_TRACEBACK"):
            raise
        raise user_error(path, what, e) from e


def load_module(path: str) -> ModuleType:
    if not os.path.isfile(path):
        raise InputError(f"FILE must be a Python file with a @kernel function, got {path!r} (not found)")
    name = "tilewise_trace_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"FILE must be a Python file, got {path!r}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        _guarded(path, "the file itself", spec.loader.exec_module, mod)
    except InputError:
        sys.modules.pop(name, None)
        raise
    return mod


def pick_kernel(mod: ModuleType, name: str | None) -> Kernel:
    ks = {k: v for k, v in vars(mod).items() if isinstance(v, Kernel) and not isinstance(v, Device)}
    if name:
        if name not in ks:
            raise InputError(f"--kernel must be one of {sorted(ks)}, got {name!r}")
        return ks[name]
    default = getattr(mod, "KERNEL", None)
    if isinstance(default, str) and default in ks:
        return ks[default]
    if len(ks) == 1:
        return next(iter(ks.values()))
    if not ks:
        raise InputError(f"{mod.__file__} defines no @kernel function")
    raise InputError(f"{mod.__file__} defines several kernels; pick one with --kernel {{{','.join(sorted(ks))}}}")


DEFAULT_TOLERANCE = 1e-3  # max |error| a file's check() may report when it sets no TOLERANCE (fp32 results ~1)
MAX_UNSAMPLED_BLOCKS = 65536  # more blocks than this without --sample: refused (hours of simulation)


def _check_result(path: str, mod: ModuleType, args: Any, blocks: Any) -> dict[str, Any]:
    """Run the file's check(args, blocks) and judge it: ok, failed (error above tolerance) or impossible."""
    tol = getattr(mod, "TOLERANCE", DEFAULT_TOLERANCE)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
        raise InputError(f"{path}: TOLERANCE must be a finite number >= 0, got {shown(tol)}")
    err = _guarded(path, "check()", mod.check, args, blocks)
    if isinstance(err, bool) or not isinstance(err, (int, float, np.floating, np.integer)):
        raise InputError(f"{path}: check() must return the max |error| as a number, got {type(err).__name__}")
    err = float(err)
    if err < 0:  # an error magnitude cannot be negative: the check computed something else
        raise InputError(f"{path}: check() must return the max |error|, a number >= 0, got {err:g}")
    out: dict[str, Any] = {"max_abs_error_vs_numpy": err if math.isfinite(err) else None, "tolerance": float(tol)}
    if math.isnan(err):
        out["ok"] = False
        out["problem"] = (
            "the check is impossible: the error is NaN, so some output the simulated blocks should write was "
            "never written (it still holds the NaN poison) or read uninitialised shared memory; does the launch "
            "shape match what the kernel expects (--grid, --block)?"
        )
    elif err > tol:
        out["ok"] = False
        out["problem"] = f"the result is wrong: max |error| vs numpy = {err:.3g} > tolerance {tol:g}"
    else:
        out["ok"] = True
        out["problem"] = None
    return out


def _launch_args(path: str, k: Kernel, args: Any) -> None:
    """setup()'s result must be the kernel's arguments: numeric numpy arrays or numbers, one per parameter."""

    if not isinstance(args, (tuple, list)):
        raise InputError(f"{path}: setup() must return a tuple of the kernel's arguments, got {type(args).__name__}")
    nparams = k.fn.__code__.co_argcount
    if len(args) != nparams:
        raise InputError(
            f"{path}: setup() returned {len(args)} arguments for kernel {k.__name__}, which takes {nparams}"
        )
    for i, a in enumerate(args):
        what = f"{path}: setup() argument {i} ({k.fn.__code__.co_varnames[i]})"
        if not isinstance(a, (np.ndarray, LazyArray, int, float, bool, np.generic)):
            raise InputError(f"{what} must be a numpy array or a number, got {type(a).__name__}")
        dt = getattr(a, "dtype", None)
        if dt is not None and np.dtype(dt).kind not in "biufc":  # strings, objects, datetimes: no GPU memory
            raise InputError(f"{what} must hold numbers (a bool, int or float dtype), got dtype {np.dtype(dt)}")


def _shared_bytes(path: str, mod: ModuleType, block: Any) -> int:
    value = getattr(mod, "SHARED_BYTES", 0)
    if callable(value):
        value = _guarded(path, "SHARED_BYTES()", value, block)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InputError(f"{path}: SHARED_BYTES must be a whole number of bytes >= 0, got {shown(value)}")
    return int(value)


def run_file(
    path: str,
    grid: Any = None,  # (x, y, z) or a prefix of it; None: the file's GRID
    block: Any = None,
    kernel: str | None = None,
    sample: int | None = None,
    seed: int = 0,
    hazards: bool = True,
    max_steps: int | None = None,
    time_limit: float | None = None,
    hard_exit: bool = False,
) -> tuple[Trace, dict[str, Any]]:
    """Load FILE, launch its kernel, return (trace, report dict with the check added).

    Errors in the file (syntax, setup(), the kernel, check()) come back as one InputError line naming the
    file and line. `max_steps` stops an endless kernel block (default runtime.MAX_STEPS); `time_limit`
    (seconds, default DEFAULT_TIME_LIMIT) bounds the whole run: the import, setup(), the launch and check().
    """
    global _LIMIT
    seed = positive_int("--seed", seed, minimum=0, maximum=2**63 - 1)
    if max_steps is not None:
        max_steps = positive_int("--max-steps", max_steps)
    limit = DEFAULT_TIME_LIMIT if time_limit is None else fraction("--time-limit", time_limit, low=1e-3, high=1e9)
    outer = _LIMIT
    with _Deadline(limit, str(path), hard_exit) as deadline:
        _LIMIT = deadline
        try:
            return _run(path, grid, block, kernel, sample, seed, hazards, max_steps, deadline)
        except RunTimeout:  # the alarm fired in tilewise's own code between the user's pieces
            raise InputError(
                f"{path}: stopped after {limit:g} s, the run's time limit; allow more with --time-limit"
            ) from None
        finally:
            _LIMIT = outer


def _run(
    path: str,
    grid: Any,
    block: Any,
    kernel: str | None,
    sample: int | None,
    seed: int,
    hazards: bool,
    max_steps: int | None,
    deadline: _Deadline,
) -> tuple[Trace, dict[str, Any]]:
    mod = load_module(path)
    k = pick_kernel(mod, kernel)
    grid = _dims("--grid", grid) if grid is not None else _dims(f"GRID in {path}", getattr(mod, "GRID", 1))
    block = _dims("--block", block) if block is not None else _dims(f"BLOCK in {path}", getattr(mod, "BLOCK", 32))
    grid, block = launch_shape(grid, block)  # before setup() builds arrays for an impossible launch
    total = grid[0] * grid[1] * grid[2]
    if sample is None and total > MAX_UNSAMPLED_BLOCKS:
        raise InputError(
            f"--grid {','.join(map(str, grid))} has {total:,} blocks; simulate a sample of them with --sample N "
            f"(at most {MAX_UNSAMPLED_BLOCKS:,} blocks run without one)"
        )
    if not callable(getattr(mod, "setup", None)):
        raise InputError(f"{path} must define setup(grid, block, rng) returning the kernel's arguments")
    rng = np.random.default_rng(seed)
    args = _guarded(path, "setup()", mod.setup, grid, block, rng)
    _launch_args(path, k, args)
    shared_bytes = _shared_bytes(path, mod, block)
    tr = _guarded(
        path,
        f"kernel {k.__name__}",
        launch,
        k,
        grid,
        block,
        *args,
        shared_bytes=shared_bytes,
        sample=sample,
        hazards=hazards,
        max_steps=MAX_STEPS if max_steps is None else max_steps,
        time_limit=deadline.remaining(),
    )
    rep = report(tr)
    if hasattr(mod, "check"):
        rep["check"] = _check_result(path, mod, args, tr.blocks_simulated if sample else None)
    return tr, rep


def _cmd_trace(a: argparse.Namespace) -> int:
    if a.sample is not None:
        a.sample = positive_int("--sample", a.sample)
    _, rep = run_file(
        a.file,
        grid=a.grid,
        block=a.block,
        kernel=a.kernel,
        sample=a.sample,
        seed=a.seed,
        hazards=not a.no_hazards,
        max_steps=a.max_steps,
        time_limit=a.time_limit,
        hard_exit=True,
    )
    chk = rep.get("check")
    failed = chk is not None and not chk["ok"]
    if a.json:
        print(json.dumps(rep, indent=2, allow_nan=False))
    else:
        print(render_text(rep))
        if chk is not None and chk["ok"]:
            print(
                f"\nresult check: max |error| vs numpy = {chk['max_abs_error_vs_numpy']:.3g} "
                f"(tolerance {chk['tolerance']:g}): ok"
            )
    if failed:
        assert chk is not None
        print(f"tilewise: result check failed: {chk['problem']}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "trace",
        help="simulate a Python CUDA-style kernel warp by warp: per-line sectors, bank conflicts, divergence, hazards",
        description=(
            "Run a kernel written in tilewise's Python kernel language through the warp simulator and print, "
            "for each source line that touches memory, warp instructions, sectors per request (global), "
            "wavefronts and bank conflicts (shared), broadcasts, active lanes, the ideal, and the hazards found."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="a Python file with @kernel functions and setup(grid, block, rng)")
    p.add_argument("--grid", help="grid dimensions, e.g. 4,4 (default: the file's GRID)")
    p.add_argument("--block", help="block dimensions, e.g. 32,32 (default: the file's BLOCK)")
    p.add_argument("--kernel", help="which kernel, when the file has several")
    p.add_argument("--sample", type=cli_int, help="simulate only N blocks spread over the grid (faster)")
    p.add_argument("--seed", type=cli_int, default=0, help="random seed for the inputs, >= 0 (default 0)")
    p.add_argument("--no-hazards", action="store_true", help="skip the race / barrier / bounds checks")
    p.add_argument(
        "--max-steps",
        type=cli_int,
        default=None,
        help="statements one block may run before it is stopped as endless (default 100,000)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds the whole run may take: the file's import, setup(), the launch and check() (default 60)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_trace)
