"""Shared test helpers: seeding, the kernel device, poisoned outputs and an element-wise close check.

Every test file uses these instead of its own copy (tests/conftest.py wires them into fixtures):

- ``seed_everything(seed)`` seeds Python's ``random``, NumPy's global generator and torch (CPU and CUDA)
  when torch is loaded; the autouse ``_seed`` fixture calls it before every test with a seed derived
  from the test's id, so a test sees the same data whatever runs before it (xdist included).
- ``interpreting()`` / ``kernel_device()``: Triton kernels run on the CPU only under ``TRITON_INTERPRET=1``;
  otherwise they need a CUDA GPU. Tests marked ``kernel`` skip when neither is there, tests marked
  ``gpu`` skip only when there is no CUDA device.
- ``poison_(x)`` fills a torch tensor or NumPy array in place so that any element a kernel forgets to
  write is visible: NaN for floating types, ``int_sentinel(dtype)`` (the most negative value) for
  integers, ``True`` for booleans. ``poisoned(shape, dtype, device)`` allocates a new one.
  ``poison_allocations(monkeypatch, owner, *names)`` makes the allocators ``owner.name`` return
  poisoned memory (e.g. ``torch.empty`` as seen by a kernel module).
- ``assert_close(actual, expected, atol=, rtol=)`` compares every element in float64 and, on failure,
  says how many elements mismatch, where the first few are, and the largest absolute and relative
  errors. An unwritten (NaN) element fails even where the reference is NaN-free.
- ``cli(argv, capsys)`` runs ``tilewise.cli.main`` in-process and returns (exit status, stdout, stderr);
  ``refused(argv, capsys, needle)`` asserts the CLI refused with status 2 and one line naming ``needle``.

Torch is imported lazily: the model and simulator tests run without it.
"""

from __future__ import annotations

import os
import random
import sys
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "assert_close",
    "cli",
    "int_sentinel",
    "interpreting",
    "kernel_device",
    "poison_",
    "poison_allocations",
    "poisoned",
    "refused",
    "seed_everything",
    "seed_for",
]


# ---------------------------------------------------------------------------------------------------------
# seeding


def seed_for(node_id: str) -> int:
    """A stable 32-bit seed for one test id (the same on every run and in every xdist worker)."""
    return zlib.crc32(node_id.encode())


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy's global generator and, when torch is loaded, torch on every device."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch = sys.modules.get("torch")  # a test that never imported torch does not pay for it
    if torch is not None:
        torch.manual_seed(seed)  # seeds the CUDA generators too


# ---------------------------------------------------------------------------------------------------------
# where kernels run


def interpreting() -> bool:
    """True when Triton runs kernels on the CPU through its interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def kernel_device() -> str:
    """The device kernel tests allocate on: "cuda" when a GPU runs the kernels, else "cpu" (under the
    interpreter, or while collecting tests that the `kernel` marker will skip)."""
    return "cuda" if not interpreting() and cuda_available() else "cpu"


# ---------------------------------------------------------------------------------------------------------
# poison


def _is_torch(x: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def int_sentinel(dtype: Any) -> int:
    """The value integer outputs are poisoned with: the dtype's most negative value (0 for unsigned)."""
    if _is_torch_dtype(dtype):
        import torch

        return int(torch.iinfo(dtype).min)
    return int(np.iinfo(np.dtype(dtype)).min)


def _is_torch_dtype(dtype: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(dtype, torch.dtype)


def poison_(x: Any) -> Any:
    """Fill `x` (torch tensor or NumPy array) in place with values a correct kernel overwrites; return it.

    Floating and complex types get NaN, integers `int_sentinel(dtype)`, booleans True.
    """
    if _is_torch(x):
        import torch

        if x.is_floating_point() or x.is_complex():
            return x.fill_(float("nan"))
        if x.dtype == torch.bool:
            return x.fill_(True)
        return x.fill_(int_sentinel(x.dtype))
    arr = np.asarray(x)
    if arr is not x:
        raise TypeError(f"poison_ needs a torch tensor or a NumPy array, got {type(x).__name__}")
    if np.issubdtype(arr.dtype, np.inexact):
        arr.fill(np.nan)
    elif arr.dtype == np.bool_:
        arr.fill(True)
    else:
        arr.fill(int_sentinel(arr.dtype))
    return arr


def poisoned(shape: Any, dtype: Any, device: str | None = None) -> Any:
    """A new poisoned tensor (torch dtype) or array (NumPy dtype) of `shape`."""
    if _is_torch_dtype(dtype):
        import torch

        return poison_(torch.empty(shape, dtype=dtype, device=device or kernel_device()))
    if device not in (None, "cpu"):
        raise ValueError(f"NumPy arrays live on the CPU, got device={device!r}")
    return poison_(np.empty(shape, dtype=dtype))


def poison_allocations(monkeypatch: Any, owner: Any, *names: str) -> None:
    """Make each allocator `owner.<name>` return poisoned memory for the rest of the test.

    `owner` is a module (``kernel_module.torch`` patches ``torch.empty`` everywhere; monkeypatch restores it)
    or any object whose attribute returns a tensor or array.
    """
    if not names:
        raise ValueError("name at least one allocator, e.g. poison_allocations(mp, torch, 'empty')")
    for name in names:
        real: Callable[..., Any] = getattr(owner, name)

        def allocate(*args: Any, _real: Callable[..., Any] = real, **kwargs: Any) -> Any:
            return poison_(_real(*args, **kwargs))

        monkeypatch.setattr(owner, name, allocate)


# ---------------------------------------------------------------------------------------------------------
# the element-wise check


def _as_float64(x: Any) -> np.ndarray:
    if _is_torch(x):
        return x.detach().to("cpu").double().numpy()
    return np.asarray(x, dtype=np.float64)


def assert_close(
    actual: Any,
    expected: Any,
    *,
    atol: Any,
    rtol: float = 0.0,
    what: str = "output",
    equal_nan: bool = False,
    show: int = 5,
) -> None:
    """Assert |actual - expected| <= atol + rtol * |expected| for EVERY element, compared in float64.

    `atol` is a number or an array broadcastable to the shape (a per-element error bound, e.g. one that
    grows with the K-sum of |a||b| in a matmul). On failure the message gives the number of mismatching
    elements, the first `show` of them (index, got, want, bound), the largest absolute and relative
    errors with their indices, and how many elements are NaN (never written, when the output was
    poisoned). Infinities must match exactly; NaN in `actual` matches only a NaN in `expected` and
    only with `equal_nan=True`.
    """
    a = _as_float64(actual)
    e = _as_float64(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{what}: shape {a.shape} != expected {e.shape}")
    tol_abs = np.broadcast_to(_as_float64(atol), a.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - e)
        bound = tol_abs + rtol * np.abs(e)
        ok = diff <= bound
        ok |= (a == e) & np.isinf(e)  # the same infinity
        if equal_nan:
            ok |= np.isnan(a) & np.isnan(e)
    bad = ~ok
    n_bad = int(bad.sum())
    if n_bad == 0:
        return
    idx = np.argwhere(bad)
    first = ", ".join(
        f"{tuple(int(i) for i in ix)}: got {a[tuple(ix)]:.6g} want {e[tuple(ix)]:.6g} (bound {bound[tuple(ix)]:.3g})"
        for ix in idx[:show]
    )
    finite = np.isfinite(diff)
    atol_text = f"{float(tol_abs.flat[0]):g}" if np.ndim(atol) == 0 else f"per element, max {float(tol_abs.max()):.3g}"
    parts = [f"{what}: {n_bad} of {a.size} elements mismatch (atol={atol_text}, rtol={rtol:g})", f"first: {first}"]
    if finite.any():
        d = np.where(finite, diff, -1.0)
        i_abs = np.unravel_index(int(np.argmax(d)), a.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(finite & (e != 0), diff / np.abs(e), -1.0)
        i_rel = np.unravel_index(int(np.argmax(rel)), a.shape)
        parts.append(f"max abs err {diff[i_abs]:.3g} at {tuple(int(i) for i in i_abs)}")
        if rel[i_rel] >= 0:
            parts.append(f"max rel err {rel[i_rel]:.3g} at {tuple(int(i) for i in i_rel)}")
    n_nan = int((np.isnan(a) & ~np.isnan(e)).sum())
    if n_nan:
        parts.append(f"{n_nan} NaN where the reference is a number (never written?)")
    raise AssertionError("; ".join(parts))


# ---------------------------------------------------------------------------------------------------------
# the CLI, in-process


def cli(argv: list[str], capsys: Any) -> tuple[Any, str, str]:
    """(exit status, stdout, stderr) of `tilewise ARGV`; argparse's SystemExit gives its code."""
    from tilewise.cli import main

    try:
        rc = main(argv)
    except SystemExit as e:  # argparse: --help or a usage error
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def refused(argv: list[str], capsys: Any, needle: str) -> str:
    """Assert `tilewise ARGV` exits 2 with one line on stderr, no traceback, containing `needle`; return it."""
    rc, out, err = cli(argv, capsys)
    assert rc == 2, (argv, rc, out[-300:], err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, (argv, err)
    assert needle in err, (needle, err)
    return err
