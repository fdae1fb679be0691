"""Global and shared arrays as the simulated kernel sees them: typed, flat, with byte addresses."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from tilewise.errors import InputError


class Accessor(Protocol):
    """What an array needs of the executor that runs its launch (`runtime.Executor`)."""

    running: bool  # True while its launch runs

    def load(self, obj: MemArray, idx: Any, site: Any) -> Any: ...

    def store(self, obj: MemArray, idx: Any, value: Any, site: Any) -> None: ...


GLOBAL_BASE = 0x7F00_0000_0000  # first global allocation; every allocation is 256-byte aligned like cudaMalloc's


class MemArray:
    """A global or shared array, or a view of one (a row of a 2-D shared array, `A + offset`, `vec(A, 4)`).

    data: the whole allocation as a 1-D numpy array of access units (a (n, vec) view for vector types).
    offset: the view's first unit, an int or a per-thread vector.
    shape / strides: in units; the last index moves by one unit.
    owner: the executor of the launch the array belongs to (runtime.launch sets it for the arguments,
    the executor for the shared arrays it allocates): `A[i]` outside the kernel's rewritten code is
    its `load` / `store`. Handed down here, so the memory model never imports the runtime.
    """

    __slots__ = ("base", "data", "name", "offset", "owner", "shape", "space", "strides", "unit_bytes", "vec")

    def __init__(
        self,
        space: str,
        data: Any,
        base: Any,
        name: str,
        shape: Any = None,
        offset: int = 0,
        vec: int = 1,
        owner: Accessor | None = None,
    ) -> None:
        self.owner = owner
        self.space = space
        self.data = data
        self.base = base
        self.name = name
        self.vec = vec
        self.unit_bytes = data.dtype.itemsize * vec
        self.offset = offset
        self.shape = tuple(shape) if shape is not None else (len(data),)
        st = []
        acc = 1
        for d in reversed(self.shape):
            st.append(acc)
            acc *= d
        self.strides = tuple(reversed(st))

    @property
    def dtype(self) -> Any:
        return self.data.dtype

    @property
    def size(self) -> int:
        return len(self.data)

    def view(self, offset: Any, shape: Any) -> MemArray:
        return MemArray(self.space, self.data, self.base, self.name, shape, offset, self.vec, self.owner)

    def __add__(self, k: Any) -> MemArray:
        """Pointer arithmetic: `A + row * K` is the array starting `row * K` elements further."""
        if isinstance(k, MemArray):
            return NotImplemented
        return self.view(self.offset + k, (self.shape[0],) if len(self.shape) == 1 else self.shape)

    __radd__ = __add__

    def __len__(self) -> int:
        return int(self.shape[0])

    def _running_owner(self) -> Accessor:
        if self.owner is None or not self.owner.running:
            raise InputError("this is a kernel builtin: call it inside a @kernel function run by launch()")
        return self.owner

    def __getitem__(self, idx: Any) -> Any:
        return self._running_owner().load(self, idx, None)

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._running_owner().store(self, idx, value, None)

    def __repr__(self) -> str:
        return f"<{self.space} {self.name} {self.data.dtype}{'x' + str(self.vec) if self.vec > 1 else ''} {self.shape}>"


def vec(arr: MemArray, n: int) -> MemArray:
    """The vector-typed view of an array: `vec(A, 4)[i]` is the float4 at elements 4i .. 4i+3 (16 bytes).

    The kernel equivalent of `reinterpret_cast<float4*>(A)[i]`; the load returns a `Vec` (.x .y .z .w).
    """
    if not isinstance(arr, MemArray):
        raise InputError(f"vec() needs a global or shared array, got {type(arr).__name__}")
    if arr.vec != 1:
        raise InputError(f"vec() of an array that is already a vector view ({arr.vec} elements)")
    if not isinstance(arr.data, np.ndarray):
        raise InputError(f"vec({arr.name}, {n}) needs a numpy array; {arr.name} is built lazily (a LazyArray)")
    nbytes = arr.data.dtype.itemsize * n
    if n not in (1, 2, 4) or nbytes not in (1, 2, 4, 8, 16):
        raise InputError(f"vec(A, n) needs n in (2, 4) and n x itemsize <= 16 bytes, got n={n} for {arr.data.dtype}")
    if not isinstance(arr.offset, (int, np.integer)) or arr.offset % n:
        raise InputError(f"vec({arr.name}, {n}): the view must start at a multiple of {n} elements")
    if (arr.base + arr.offset * arr.data.dtype.itemsize) % nbytes:
        raise InputError(f"vec({arr.name}, {n}): the address is not {nbytes}-byte aligned")
    m = len(arr.data) // n
    data = arr.data[: m * n].reshape(m, n)
    total = int(np.prod(arr.shape)) // n
    return MemArray(arr.space, data, arr.base, arr.name, (total,), int(arr.offset) // n, n, arr.owner)


class Vec:
    """A per-thread short vector (float2 / float4): `.x .y .z .w` or `[i]`, each a per-thread value."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v  # (threads, n) or (n,) when uniform

    def __getitem__(self, i: int) -> Any:
        return self.v[..., i]

    x = property(lambda s: s.v[..., 0])
    y = property(lambda s: s.v[..., 1])
    z = property(lambda s: s.v[..., 2])
    w = property(lambda s: s.v[..., 3])

    def __len__(self) -> int:
        return int(self.v.shape[-1])

    def __repr__(self) -> str:
        return f"Vec({self.v!r})"


def make_vec(*parts: Any) -> Any:
    """`make_float4(a, b, c, d)`: a per-thread vector from per-thread values (for a vector store)."""
    return Vec(np.stack(np.broadcast_arrays(*[np.asarray(p) for p in parts]), axis=-1))
