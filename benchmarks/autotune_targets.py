"""Kernels tilewise did not write, as `tilewise calibrate` targets (and the descriptions the verdict ranks with).

    tilewise calibrate benchmarks/autotune_targets.py:FLAGGEMS_MM --budget 40 --out flaggems_mm.h200.json

FLAGGEMS_MM is FlagGems' `mm_kernel_general` (flag-gems, ops/mm.py) over the configs its NVIDIA Hopper
tune file gives `mm` (`runtime.get_tuned_config("mm")`), GROUP_M 8 as FlagGems' launcher passes it,
on CALIBRATION_SHAPES: fp16, M, N and K multiples of 16 drawn log-uniform (seed SEED + 11), none of
them a shape `autotune_external.py` times for the verdict. It is built when first read (module
`__getattr__`), so this file imports on a machine without flag-gems or a GPU (the report reads
FLAGGEMS_DESC only).
"""

from __future__ import annotations

import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from tilewise.advise.kernel import describe  # noqa: E402

SEED = 20261201  # autotune_external.SEED: the verdict's shapes use SEED + 1 .. SEED + 3
FLAGGEMS_DESC = describe("gemm", name="flag_gems.mm_kernel_general", fixed={"group_m": 8})
FLAGGEMS_GROUP_M = 8  # what flag_gems.ops.mm.general_mm passes


def calibration_shapes(n: int = 8) -> list[dict[str, Any]]:
    """n GEMM shapes for calibration, in the model's argument names (M, N, K, dtype, layout)."""
    sys.path.insert(0, HERE)
    import autotune_external as X

    return [{"M": s["m"], "N": s["n"], "K": s["k"], "dtype": s["dtype"], "layout": s["layout"]}
            for s in X.gemm_shapes(SEED + 11, n)]  # fmt: skip


class _GroupM:
    """FlagGems' jit kernel launched as its launcher does: GROUP_M fixed, the config's meta-parameters given."""

    def __init__(self, jit: Any):
        self.jit = jit

    def __getitem__(self, grid: Any) -> Any:
        return lambda *args, **kw: self.jit[grid](*args, GROUP_M=FLAGGEMS_GROUP_M, **kw)


def _flaggems_args(shape: dict[str, Any]) -> tuple[tuple[Any, ...], Any, dict[str, Any]]:
    import torch
    import triton

    m, n, k = shape["M"], shape["N"], shape["K"]
    dt = torch.float16 if shape["dtype"] == "fp16" else torch.bfloat16
    a = torch.randn(m, k, device="cuda", dtype=dt)
    b = torch.randn(k, n, device="cuda", dtype=dt)
    c = torch.empty(m, n, device="cuda", dtype=dt)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)
    args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    return args, grid, {"A": a, "B": b, "M": m, "N": n, "K": k}


def _flaggems_tunable() -> Any:
    import importlib

    from flag_gems import runtime

    from tilewise.advise.calibrate import Tunable

    sys.path.insert(0, HERE)
    import autotune_external as X

    fg = importlib.import_module("flag_gems.ops.mm")  # the module: the package re-exports its mm function as ops.mm
    return Tunable(FLAGGEMS_DESC, _GroupM(X.unwrap_jit(fg.mm_kernel_general)), list(runtime.get_tuned_config("mm")),
                   calibration_shapes(), _flaggems_args)  # fmt: skip


def __getattr__(name: str) -> Any:
    if name == "FLAGGEMS_MM":
        t = _flaggems_tunable()
        globals()[name] = t
        return t
    raise AttributeError(name)
