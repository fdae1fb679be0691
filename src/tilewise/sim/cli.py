"""`tilewise trace FILE`: run a Python CUDA-style kernel through the warp simulator, print the per-line report."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

from tilewise.errors import InputError

EPILOG = """examples:
  tilewise trace examples/sim/gemm_tiled.py --grid 4,4 --block 32,32
  tilewise trace examples/sim/gemm_tiled.py --grid 16,16 --block 32,32 --sample 4 --json
  tilewise trace examples/sim/block_sum.py --kernel block_sum_shfl

The file defines one or more @kernel functions and setup(grid, block, rng) -> launch arguments;
optionally check(args, blocks) -> max error against numpy, GRID, BLOCK and SHARED_BYTES.
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


def load_module(path: str):
    if not os.path.isfile(path):
        raise InputError(f"FILE must be a Python file with a @kernel function, got {path!r} (not found)")
    name = "tilewise_trace_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"FILE must be a Python file, got {path!r}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def pick_kernel(mod, name: str | None):
    from tilewise.sim.runtime import Device, Kernel

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


def run_file(path, grid=None, block=None, kernel=None, sample=None, seed=0, hazards=True):
    """Load FILE, launch its kernel, return (trace, report dict with the check added)."""
    import numpy as np

    from tilewise.sim.report import report
    from tilewise.sim.runtime import launch

    mod = load_module(path)
    k = pick_kernel(mod, kernel)
    grid = grid or tuple(getattr(mod, "GRID", (1, 1, 1)))
    block = block or tuple(getattr(mod, "BLOCK", (32, 1, 1)))
    if not hasattr(mod, "setup"):
        raise InputError(f"{path} must define setup(grid, block, rng) returning the kernel's arguments")
    rng = np.random.default_rng(seed)
    args = mod.setup(_dims("grid", ",".join(map(str, grid))), _dims("block", ",".join(map(str, block))), rng)
    shared_bytes = getattr(mod, "SHARED_BYTES", 0)
    if callable(shared_bytes):
        shared_bytes = shared_bytes(block)
    tr = launch(k, grid, block, *args, shared_bytes=shared_bytes, sample=sample, hazards=hazards)
    rep = report(tr)
    if hasattr(mod, "check"):
        err = mod.check(args, tr.blocks_simulated if sample else None)
        rep["check"] = {"max_abs_error_vs_numpy": err}
    return tr, rep


def _cmd_trace(a: argparse.Namespace) -> int:
    from tilewise.sim.report import render_text

    if a.sample is not None and a.sample < 1:
        raise InputError(f"--sample must be a positive number of blocks, got {a.sample}")
    _, rep = run_file(
        a.file,
        grid=_dims("grid", a.grid),
        block=_dims("block", a.block),
        kernel=a.kernel,
        sample=a.sample,
        seed=a.seed,
        hazards=not a.no_hazards,
    )
    if a.json:
        print(json.dumps(rep, indent=2))
        return 0
    print(render_text(rep))
    if "check" in rep:
        print(f"\nresult check: max |error| vs numpy = {rep['check']['max_abs_error_vs_numpy']:.3g}")
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
    p.add_argument("--seed", type=int, default=0, help="random seed for the inputs (default 0)")
    p.add_argument("--no-hazards", action="store_true", help="skip the race / barrier / bounds checks")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_trace)
