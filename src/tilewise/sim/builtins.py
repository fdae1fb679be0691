"""The names a kernel uses: CUDA's built-in variables and intrinsics, on per-thread numpy vectors."""

from __future__ import annotations

import linecache
import re
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from tilewise.sim.memory import MemArray, Vec
from tilewise.sim.runtime import current

float16, float32, float64 = np.float16, np.float32, np.float64
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32 = np.uint8, np.uint16, np.uint32
FULL_MASK = 0xFFFFFFFF


class _Dim3:
    __slots__ = ("_get",)

    def __init__(self, get: Callable[[int], Any]) -> None:
        self._get = get

    x = property(lambda s: s._get(0))
    y = property(lambda s: s._get(1))
    z = property(lambda s: s._get(2))


def _tid(i: int) -> Any:
    ex = current()
    return (ex.tx, ex.ty, ex.tz)[i]


threadIdx = _Dim3(_tid)
blockIdx = _Dim3(lambda i: current().bidx[i])
blockDim = _Dim3(lambda i: current().block[i])
gridDim = _Dim3(lambda i: current().grid[i])


def lane_id() -> Any:
    """threadIdx's linear index % 32 (the lane within its warp)."""
    return current().lane


def warp_id() -> Any:
    """The linear thread index // 32 (the warp within its block)."""
    return current().tid // 32


def _caller_line(depth: int = 2) -> int:
    return sys._getframe(depth).f_lineno


def _assigned_name(depth: int = 2, default: str = "shared") -> str:
    f = sys._getframe(depth)
    text = linecache.getline(f.f_code.co_filename, f.f_lineno)  # "" when the source is not on disk
    m = re.match(r"\s*([A-Za-z_]\w*)\s*=", text)
    return m.group(1) if m else default


def syncthreads() -> None:
    """__syncthreads(): a barrier for the block's threads; all live threads must reach it together."""
    current().sync(_caller_line())


def syncwarp(mask: Any = FULL_MASK) -> None:
    """__syncwarp(): orders the shared-memory accesses of the calling warp's lanes (the hazard checker then
    accepts a read of what another lane of the same warp wrote before it); other warps are not ordered."""
    current().syncwarp(_caller_line())


def shared(shape: Any, dtype: Any = np.float32, name: str | None = None) -> MemArray:
    """`__shared__ float s[shape]`: a static shared array (fresh and uninitialised in every block)."""
    return current().alloc_shared(shape, dtype, name or _assigned_name())


def dynamic_shared(dtype: Any = np.float32, name: str | None = None) -> MemArray:
    """`extern __shared__ float s[]`: the launch's dynamic shared memory (launch(..., shared_bytes=N))."""
    return current().dynamic_shared(dtype, name or _assigned_name())


def shfl_down_sync(mask: Any, var: Any, delta: int, width: int = 32) -> Any:
    """__shfl_down_sync: lane i gets lane i+delta's value (its own when i+delta leaves the segment)."""
    return current().shfl(var, "down", delta, width)


def shfl_up_sync(mask: Any, var: Any, delta: int, width: int = 32) -> Any:
    """__shfl_up_sync: lane i gets lane i-delta's value (its own below delta)."""
    return current().shfl(var, "up", delta, width)


def shfl_xor_sync(mask: Any, var: Any, lane_mask: int, width: int = 32) -> Any:
    """__shfl_xor_sync: lane i gets lane i^lane_mask's value (butterfly)."""
    return current().shfl(var, "xor", lane_mask, width)


def shfl_sync(mask: Any, var: Any, src_lane: int, width: int = 32) -> Any:
    """__shfl_sync: every lane gets src_lane's value (within its segment of `width` lanes)."""
    return current().shfl(var, "idx", src_lane, width)


def ballot_sync(mask: Any, pred: Any) -> Any:
    """__ballot_sync: bit i set when lane i is active and pred holds (the same value in every lane)."""
    return current().vote("ballot", pred)


def any_sync(mask: Any, pred: Any) -> Any:
    return current().vote("any", pred)


def all_sync(mask: Any, pred: Any) -> Any:
    return current().vote("all", pred)


def _atomic(kind: str, arr: MemArray, idx: Any, val: Any) -> Any:
    return current().atomic(kind, arr, idx, val, _caller_line(3))


def atomic_add(arr: MemArray, idx: Any, val: Any) -> Any:
    """atomicAdd(&arr[idx], val): returns the old values (threads applied in thread order)."""
    return _atomic("add", arr, idx, val)


def atomic_max(arr: MemArray, idx: Any, val: Any) -> Any:
    return _atomic("max", arr, idx, val)


def atomic_min(arr: MemArray, idx: Any, val: Any) -> Any:
    return _atomic("min", arr, idx, val)


def atomic_exch(arr: MemArray, idx: Any, val: Any) -> Any:
    return _atomic("exch", arr, idx, val)


def select(cond: Any, a: Any, b: Any) -> Any:
    """`cond ? a : b` computed by every thread (a select instruction, no branch): both sides are evaluated."""
    if isinstance(a, Vec) or isinstance(b, Vec):
        av = a.v if isinstance(a, Vec) else np.asarray(a)
        bv = b.v if isinstance(b, Vec) else np.asarray(b)
        return Vec(np.where(np.asarray(cond)[..., None], av, bv))
    return np.where(cond, a, b)


def fminf(a: Any, b: Any) -> Any:
    return np.minimum(a, b)


def fmaxf(a: Any, b: Any) -> Any:
    return np.maximum(a, b)


imin, imax = fminf, fmaxf


def sqrtf(x: Any) -> Any:
    return np.sqrt(np.asarray(x, dtype=np.float32))


def expf(x: Any) -> Any:
    return np.exp(np.asarray(x, dtype=np.float32))


def as_int(x: Any) -> Any:
    """(int)x: truncation toward zero, per thread."""
    return np.trunc(x).astype(np.int64) if isinstance(x, np.ndarray) else int(x)
