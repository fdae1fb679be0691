"""Global arrays made page by page, when a simulated block (or the result check) first touches them.

`tilewise trace gemm_tiled.py --grid 65535,65535 --sample 1` describes a 2-million-square GEMM whose C
alone would be 16 TiB; the one sampled block reads 32 rows of A and 32 columns of B and writes one 32x32
tile. A `LazyArray` holds only the 4096-element pages that were read or written, each made on first touch
from a deterministic rule (the same page always has the same values), so such a launch costs what its
sampled blocks cost.

    A = normal((M, K), np.float32, rng)      # N(0, 1) values, page p drawn from its own generator
    C = poisoned((M, N), np.float32)         # NaN (floats) / the dtype's minimum (ints) until written

Both return a plain numpy array (drawn from `rng` exactly as `rng.standard_normal` would) while the array
is at most `LAZY_ABOVE` elements, so small launches keep their exact inputs and numpy speed.
Indexing: a flat int or int array on a 1-D array (what the executor does), or a tuple of ints and
slices on an N-D one (what a result check does); `to_numpy()` makes everything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tilewise.errors import InputError

PAGE = 4096  # elements per page: 16 KiB of float32, a few rows of a typical matrix
LAZY_ABOVE = 1 << 24  # elements (64 MiB of float32): smaller arrays are plain numpy arrays
MAX_ELEMENTS = 1 << 62  # addresses stay below 2^64 bytes even for 8-byte elements / 4


class LazyArray:
    """A C-ordered array of `shape` and `dtype` whose pages are made by `fill(page, n)` on first touch."""

    def __init__(
        self,
        shape: Any,
        dtype: Any,
        fill: Callable[[int, int], np.ndarray],
        *,
        _pages: dict[int, np.ndarray] | None = None,
    ) -> None:
        self.shape = tuple(int(s) for s in (shape if isinstance(shape, tuple) else (shape,)))
        if any(s < 0 for s in self.shape):
            raise InputError(f"array sizes must be >= 0, got {self.shape}")
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape, dtype=object))
        if self.size > MAX_ELEMENTS:
            raise InputError(f"an array of {self.size:,} elements is beyond a 64-bit address space")
        self._fill = fill
        self._pages: dict[int, np.ndarray] = {} if _pages is None else _pages

    # ---------------------------------------------------------------- numpy-like surface
    ndim = property(lambda s: len(s.shape))
    nbytes = property(lambda s: s.size * s.dtype.itemsize)
    itemsize = property(lambda s: s.dtype.itemsize)

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"LazyArray(shape={self.shape}, dtype={self.dtype}, pages made={len(self._pages)})"

    def reshape(self, *shape: Any) -> LazyArray:
        """A view with another shape (the same pages); -1 for one dimension, as numpy."""
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        shape = tuple(int(s) for s in shape)
        if shape.count(-1) == 1:
            rest = int(np.prod([s for s in shape if s != -1], dtype=object))
            shape = tuple(self.size // max(rest, 1) if s == -1 else s for s in shape)
        if int(np.prod(shape, dtype=object)) != self.size:
            raise InputError(f"cannot reshape an array of {self.size} elements into {shape}")
        return LazyArray(shape, self.dtype, self._fill, _pages=self._pages)

    @property
    def pages_made(self) -> int:
        return len(self._pages)

    def to_numpy(self) -> np.ndarray:
        """Every element as a numpy array (makes every page: only for arrays that fit in memory)."""
        out: np.ndarray = self[tuple(slice(None) for _ in self.shape)]
        return out

    # ---------------------------------------------------------------- pages
    def _page(self, p: int) -> np.ndarray:
        page = self._pages.get(p)
        if page is None:
            n = min(PAGE, self.size - p * PAGE)
            page = np.asarray(self._fill(p, n), dtype=self.dtype)
            if page.shape != (n,):
                raise InputError(f"a LazyArray fill must give {n} values for page {p}, gave shape {page.shape}")
            page = self._pages[p] = page.copy()
        return page

    def _gather(self, flat: np.ndarray) -> np.ndarray:
        out = np.empty(flat.shape, dtype=self.dtype)
        pg, off = np.divmod(flat, PAGE)
        for p in np.unique(pg):
            sel = pg == p
            out[sel] = self._page(int(p))[off[sel]]
        return out

    def _scatter(self, flat: np.ndarray, values: np.ndarray) -> None:
        values = np.broadcast_to(np.asarray(values, dtype=self.dtype), flat.shape)
        pg, off = np.divmod(flat, PAGE)
        for p in np.unique(pg):
            sel = pg == p
            self._page(int(p))[off[sel]] = values[sel]  # numpy order: the last write to an element wins

    def _flat(self, idx: Any) -> tuple[np.ndarray, tuple[Any, ...]]:
        """Flat element numbers of `idx` and the shape of the result."""
        if isinstance(idx, (int, np.integer)) and self.ndim == 1:
            i = int(idx)
            if not -self.size <= i < self.size:
                raise IndexError(f"index {i} is out of bounds for size {self.size}")
            return np.array([i % self.size], np.int64), ()
        if isinstance(idx, np.ndarray) and self.ndim == 1:
            f = idx.astype(np.int64, copy=False)
            if f.size and (f.min() < -self.size or f.max() >= self.size):
                raise IndexError(f"index out of bounds for size {self.size}")
            return f % max(self.size, 1), f.shape
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) > self.ndim:
            raise IndexError(f"too many indices ({len(idx)}) for an array of {self.ndim} dimensions")
        idx = idx + (slice(None),) * (self.ndim - len(idx))
        axes, shape = [], []
        for k, n in zip(idx, self.shape):
            if isinstance(k, slice):
                r = np.arange(*k.indices(n), dtype=np.int64)
                axes.append(r)
                shape.append(len(r))
            elif isinstance(k, (int, np.integer)):
                if not -n <= int(k) < n:
                    raise IndexError(f"index {int(k)} is out of bounds for an axis of size {n}")
                axes.append(np.array([int(k) % n], np.int64))
            else:
                raise InputError(f"LazyArray takes ints and slices per axis, got {type(k).__name__}")
        flat = np.zeros([len(a) for a in axes], dtype=np.int64)
        stride = 1
        for d in range(self.ndim - 1, -1, -1):
            flat += axes[d].reshape([-1 if j == d else 1 for j in range(self.ndim)]) * stride
            stride *= self.shape[d]
        return flat.reshape(-1), tuple(shape)

    def __getitem__(self, idx: Any) -> Any:
        flat, shape = self._flat(idx)
        v = self._gather(flat).reshape(shape)
        return v[()] if shape == () else v

    def __setitem__(self, idx: Any, value: Any) -> None:
        flat, shape = self._flat(idx)
        self._scatter(flat, np.broadcast_to(np.asarray(value, dtype=self.dtype), shape).reshape(-1))

    def made_sum(self) -> float | int:
        """The sum over the pages made so far (of a zero-filled array: the sum of everything)."""
        total: float | int = sum(page.sum().item() for page in self._pages.values())
        return total


def _size(shape: Any) -> int:
    shape = shape if isinstance(shape, tuple) else (shape,)
    return int(np.prod([int(s) for s in shape], dtype=object))


def normal(shape: Any, dtype: Any, rng: np.random.Generator) -> np.ndarray | LazyArray:
    """Standard-normal values: `rng.standard_normal(shape).astype(dtype)` up to LAZY_ABOVE elements, else
    a LazyArray whose page p is drawn from its own generator seeded by (one draw of rng, p)."""
    if _size(shape) <= LAZY_ABOVE:
        small: np.ndarray = rng.standard_normal(shape).astype(dtype)
        return small
    seed = int(rng.integers(0, 2**63))
    return LazyArray(shape, dtype, lambda p, n: np.random.default_rng([seed, p]).standard_normal(n))


def poisoned(shape: Any, dtype: Any) -> np.ndarray | LazyArray:
    """An output nothing has written yet: NaN for floats, the dtype's minimum for integers."""
    dt = np.dtype(dtype)
    value = np.nan if np.issubdtype(dt, np.inexact) else np.iinfo(dt).min
    if _size(shape) <= LAZY_ABOVE:
        return np.full(shape, value, dtype=dt)
    return LazyArray(shape, dt, lambda p, n: np.full(n, value, dtype=dt))


def zeros(shape: Any, dtype: Any) -> np.ndarray | LazyArray:
    """Zeros (numpy up to LAZY_ABOVE elements)."""
    if _size(shape) <= LAZY_ABOVE:
        return np.zeros(shape, dtype=dtype)
    dt = np.dtype(dtype)
    return LazyArray(shape, dt, lambda p, n: np.zeros(n, dtype=dt))
