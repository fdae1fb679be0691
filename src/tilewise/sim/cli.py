"""`tilewise trace FILE`: run a Python CUDA-style kernel through the warp simulator, print the per-line report."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys

import numpy as np

from tilewise.errors import InputError, fraction, positive_int
from tilewise.sim.lazy import LazyArray
from tilewise.sim.report import render_text, report
from tilewise.sim.runtime import MAX_STEPS, Device, Kernel, launch, launch_shape

EPILOG = """examples:
  tilewise trace examples/sim/gemm_tiled.py --grid 4,4 --block 32,32
  tilewise trace examples/sim/gemm_tiled.py --grid 16,16 --block 32,32 --sample 4 --json
  tilewise trace examples/sim/block_sum.py --kernel block_sum_shfl

The file defines one or more @kernel functions and setup(grid, block, rng) -> launch arguments;
optionally check(args, blocks) -> max |error| against numpy (the command exits 1 when it is above
TOLERANCE, default 1e-3, or NaN), GRID, BLOCK and SHARED_BYTES. An error in the file's own code is
reported as one line, FILE:LINE; a block running more than --max-steps statements is stopped.
"""


def _dims(name: str, text: str | None):
    if text is None:
        return None
    try:
        t = tuple(int(x) for x in str(text).replace("x", ",").split(",") if x.strip())
    except ValueError:
        raise InputError(f"--{name} must be 1 to 3 comma-separated positive ints such as 4,4; got {text!r}") from None
    if not 1 <= len(t) <= 3 or any(v < 1 for v in t):
        raise InputError(f"--{name} must be 1 to 3 comma-separated positive ints such as 4,4; got {text!r}")
    return t + (1,) * (3 - len(t))


def _where(tb, path: str) -> int | None:
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
    msg = str(err).splitlines()[0] if str(err) else ""
    return InputError(f"{at}: in {what}: {type(err).__name__}{': ' + msg if msg else ''}")


def _guarded(path: str, what: str, fn, *args, **kw):
    """Run a piece of the user's file; any error in it becomes one InputError line naming file and line."""
    try:
        return fn(*args, **kw)
    except InputError:
        raise
    except Exception as e:  # the user's own code: any exception it raises is theirs to fix, shown in one line
        if os.environ.get("TILEWISE_TRACEBACK"):
            raise
        raise user_error(path, what, e) from e


def load_module(path: str):
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


def pick_kernel(mod, name: str | None):
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


def _check_result(path: str, mod, args, blocks) -> dict:
    """Run the file's check(args, blocks) and judge it: ok, failed (error above tolerance) or impossible."""
    tol = getattr(mod, "TOLERANCE", DEFAULT_TOLERANCE)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
        raise InputError(f"{path}: TOLERANCE must be a finite number >= 0, got {tol!r}")
    err = _guarded(path, "check()", mod.check, args, blocks)
    if isinstance(err, bool) or not isinstance(err, (int, float, np.floating, np.integer)):
        raise InputError(f"{path}: check() must return the max |error| as a number, got {type(err).__name__}")
    err = float(err)
    out = {"max_abs_error_vs_numpy": err if math.isfinite(err) else None, "tolerance": float(tol)}
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


def run_file(
    path,
    grid=None,
    block=None,
    kernel=None,
    sample=None,
    seed=0,
    hazards=True,
    max_steps=None,
    time_limit=None,
):
    """Load FILE, launch its kernel, return (trace, report dict with the check added).

    Errors in the file (syntax, setup(), the kernel, check()) come back as one InputError line naming the
    file and line; `max_steps` / `time_limit` stop an endless kernel (defaults: runtime.MAX_STEPS, none).
    """
    seed = positive_int("--seed", seed, minimum=0, maximum=2**63 - 1)
    mod = load_module(path)
    k = pick_kernel(mod, kernel)
    grid = _dims("grid", ",".join(map(str, grid or tuple(getattr(mod, "GRID", (1, 1, 1))))))
    block = _dims("block", ",".join(map(str, block or tuple(getattr(mod, "BLOCK", (32, 1, 1))))))
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
    if not isinstance(args, (tuple, list)):
        raise InputError(f"{path}: setup() must return a tuple of the kernel's arguments, got {type(args).__name__}")
    nparams = k.fn.__code__.co_argcount
    if len(args) != nparams:
        raise InputError(
            f"{path}: setup() returned {len(args)} arguments for kernel {k.__name__}, which takes {nparams}"
        )
    for i, a in enumerate(args):
        if not isinstance(a, (np.ndarray, LazyArray, int, float, bool, np.generic)):
            raise InputError(
                f"{path}: setup() argument {i} ({k.fn.__code__.co_varnames[i]}) must be a numpy array or a "
                f"number, got {type(a).__name__}"
            )
    shared_bytes = getattr(mod, "SHARED_BYTES", 0)
    if callable(shared_bytes):
        shared_bytes = _guarded(path, "SHARED_BYTES()", shared_bytes, block)
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
        time_limit=time_limit,
    )
    rep = report(tr)
    if hasattr(mod, "check"):
        rep["check"] = _check_result(path, mod, args, tr.blocks_simulated if sample else None)
    return tr, rep


def _cmd_trace(a: argparse.Namespace) -> int:
    if a.sample is not None and a.sample < 1:
        raise InputError(f"--sample must be a positive number of blocks, got {a.sample}")
    if a.max_steps is not None:
        positive_int("--max-steps", a.max_steps)
    if a.time_limit is not None:
        fraction("--time-limit", a.time_limit, low=1e-3, high=1e9)
    _, rep = run_file(
        a.file,
        grid=_dims("grid", a.grid),
        block=_dims("block", a.block),
        kernel=a.kernel,
        sample=a.sample,
        seed=a.seed,
        hazards=not a.no_hazards,
        max_steps=a.max_steps,
        time_limit=a.time_limit,
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
        print(f"tilewise: result check failed: {chk['problem']}", file=sys.stderr)
        return 1
    return 0


def register(sub) -> None:
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
    p.add_argument("--sample", type=int, help="simulate only N blocks spread over the grid (faster)")
    p.add_argument("--seed", type=int, default=0, help="random seed for the inputs, >= 0 (default 0)")
    p.add_argument("--no-hazards", action="store_true", help="skip the race / barrier / bounds checks")
    p.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="statements one block may run before it is stopped as endless (default 100,000)",
    )
    p.add_argument("--time-limit", type=float, default=None, help="seconds the launch may run (default: none)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_trace)
