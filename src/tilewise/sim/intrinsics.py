"""Intrinsics: what the kernel builtins do inside the executor (builtins.py forwards to these).

Element-wise min/max/int/float/abs on per-thread vectors, atomics (applied lane by lane in thread order,
one order the hardware may pick), shared-memory allocation (static arrays 16-byte aligned after the
dynamic part, within the 48 KB static and 227 KB per-block limits), warp shuffles and votes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tilewise.errors import InputError
from tilewise.sim.access import WARP
from tilewise.sim.memory import MemArray, Vec
from tilewise.sim.recording import atomic_how
from tilewise.sim.state import LaunchState
from tilewise.util import cdiv

STATIC_SMEM_LIMIT = 48 * 1024  # static __shared__ arrays: at most 48 KB (CUDA guide; more needs dynamic, opt-in)
SMEM_OPTIN_LIMIT = 227 * 1024  # one block's shared memory on Hopper, opt-in
SMEM_ALIGN = 128


def align(x: int, a: int) -> int:
    """x rounded up to a multiple of a."""
    return cdiv(x, a) * a


class Intrinsics(LaunchState):
    """The executor's builtins (a mixin of runtime.Executor: n, mask, lane, tid, pad, nwarps, shared state)."""

    # ---------------------------------------------------------------- element-wise (the rewriter sends
    # min/max/int/float/abs here)
    @staticmethod
    def vmin(*a: Any) -> Any:
        if any(isinstance(x, np.ndarray) for x in a):
            return np.minimum.reduce(np.broadcast_arrays(*a)) if len(a) > 1 else np.min(a[0])
        return min(*a)

    @staticmethod
    def vmax(*a: Any) -> Any:
        if any(isinstance(x, np.ndarray) for x in a):
            return np.maximum.reduce(np.broadcast_arrays(*a)) if len(a) > 1 else np.max(a[0])
        return max(*a)

    @staticmethod
    def vint(x: int = 0) -> Any:
        if isinstance(x, np.ndarray):
            return np.trunc(x).astype(np.int64) if x.dtype.kind == "f" else x.astype(np.int64)
        return int(x)

    @staticmethod
    def vfloat(x: float = 0.0) -> Any:
        if isinstance(x, np.ndarray):
            return x.astype(np.float32) if x.dtype.kind in "iub" else x
        return float(x)

    @staticmethod
    def vabs(x: Any) -> Any:
        return abs(x)

    # ---------------------------------------------------------------- atomics
    def atomic(self, kind: str, obj: MemArray, idx: Any, value: Any, line: int) -> Any:
        if not isinstance(obj, MemArray):
            raise InputError(f"atomic_{kind} needs a global or shared array, got {type(obj).__name__}")
        flat = self.index(obj, idx)
        if isinstance(flat, MemArray):
            raise InputError(f"atomic_{kind}: {obj.name} needs an index for every dimension")
        m = self.mask
        flatv = np.broadcast_to(np.asarray(flat, dtype=np.int64), (self.n,))
        oob = m & ((flatv < 0) | (flatv >= obj.size))
        if oob.any():
            self.out_of_bounds(obj, flatv, oob, None, line)
        ok = m & ~oob
        site = self.line_site(line, f"atomic_{kind}({obj.name}, ...)")
        if self.tracing:
            how = atomic_how(kind, obj)
            r = self.record(site, obj, obj.base + flatv * obj.unit_bytes, m, "atom", how)
            if how == "loop" and r is not None:
                self.record_cas_loop(site, line, obj, r)
        if obj.space == "global" and self.tracing:
            self.touch(obj, flatv, ok, "st")
        val = np.broadcast_to(np.asarray(value, dtype=obj.dtype), (self.n,))
        old = np.zeros(self.n, dtype=obj.dtype)
        lanes = np.flatnonzero(ok)
        data = obj.data
        for t in lanes:  # in thread order, like one possible hardware order
            i = flatv[t]
            o = data[i]
            old[t] = o
            if kind == "add":
                data[i] = o + val[t]
            elif kind == "max":
                data[i] = max(o, val[t])
            elif kind == "min":
                data[i] = min(o, val[t])
            elif kind == "exch":
                data[i] = val[t]
        return old

    # ---------------------------------------------------------------- shared allocation
    def alloc_shared(self, shape: Any, dtype: Any, name: str) -> MemArray:
        dt = np.dtype(dtype)
        dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if not dims or any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1 for d in dims):
            raise InputError(f"shared({name}) needs a shape of whole numbers >= 1, got {shape!r}")
        shape = tuple(int(d) for d in dims)
        n = int(np.prod(shape, dtype=object))
        off = align(self.static_cursor, max(16, dt.itemsize))
        end = off + n * dt.itemsize
        self.static_bytes = end - align(self.shared_dyn, SMEM_ALIGN)
        if self.static_bytes > STATIC_SMEM_LIMIT:
            raise InputError(
                f"static shared memory of {self.static_bytes} B exceeds the 48 KB limit of static __shared__ arrays; "
                "use dynamic_shared() and launch(..., shared_bytes=...)"
            )
        if end > SMEM_OPTIN_LIMIT:
            raise InputError(f"shared memory of {end} B exceeds the 227 KB a block can have")
        self.static_cursor = end
        self.max_shared = max(self.max_shared, end)
        data = self.smem[off:end].view(dt)
        return MemArray("shared", data, off, name, shape, owner=self)

    def dynamic_shared(self, dtype: Any, name: str) -> MemArray:
        dt = np.dtype(dtype)
        n = self.shared_dyn // dt.itemsize
        if n == 0:
            raise InputError("dynamic_shared() needs launch(..., shared_bytes=N) with N > 0")
        self.max_shared = max(self.max_shared, self.shared_dyn)
        return MemArray("shared", self.smem[: n * dt.itemsize].view(dt), 0, name, (n,), owner=self)

    # ---------------------------------------------------------------- warp-level
    def shfl(self, var: Any, kind: str, arg: Any, width: int) -> Any:
        if isinstance(var, Vec):
            return Vec(np.stack([self.shfl(var.v[:, j], kind, arg, width) for j in range(var.v.shape[1])], axis=1))
        if not isinstance(var, np.ndarray) or var.ndim == 0:
            return var
        if width not in (1, 2, 4, 8, 16, 32):
            raise InputError(f"shuffle width must be a power of two <= 32, got {width}")
        lane = self.lane
        seg = lane // width * width
        pos = lane - seg
        arg = np.asarray(arg)
        if kind == "down":
            src = np.where(pos + arg < width, lane + arg, lane)
        elif kind == "up":
            src = np.where(pos - arg >= 0, lane - arg, lane)
        elif kind == "xor":
            x = lane ^ arg
            src = np.where((x >= seg) & (x < seg + width), x, lane)
        else:  # idx
            src = seg + arg % width
        t = self.tid - lane + src
        t = np.where(t < self.n, t, self.tid)
        return var[t]

    def vote(self, kind: str, pred: Any) -> Any:
        p = np.broadcast_to(np.asarray(pred).astype(bool), (self.n,)) & self.mask
        pp = np.concatenate([p, np.zeros(self.pad, bool)]) if self.pad else p
        pw = pp.reshape(self.nwarps, WARP)
        if kind == "ballot":
            bits = (pw.astype(np.int64) << np.arange(WARP)).sum(axis=1)
            return np.repeat(bits, WARP)[: self.n]
        mm = np.concatenate([self.mask, np.zeros(self.pad, bool)]) if self.pad else self.mask
        mw = mm.reshape(self.nwarps, WARP)
        if kind == "any":
            r = pw.any(axis=1)
        else:
            r = (pw | ~mw).all(axis=1)
        return np.repeat(r, WARP)[: self.n]
