"""The executor: runs a launch block by block, all threads of a block at once under a lane mask.

Per-thread values are numpy vectors over the block's threads (thread t = x + y*bx + z*bx*by; warp
t // 32, lane t % 32). The executor is put together from one mixin per job, each in its own module:

- control.py: lane masks and control flow (if/else, loops, break/continue/return, `a if c else b`);
- recording.py: access recording (every memory instruction cut into warps, each warp's active lanes
  through the access rules of access.py, summed per source site);
- hazards.py: shared-memory races, barrier divergence and out-of-bounds accesses;
- intrinsics.py: the builtins (element-wise min/max, atomics, shared allocation, shuffles, votes).

This module holds what ties them together: the `@kernel` / `@device` decorators, the memory
instructions (index, load, store), the step/time limit, and `launch`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilewise.errors import InputError, fraction, positive_int
from tilewise.sim.access import WARP
from tilewise.sim.control import ControlFlow
from tilewise.sim.hazards import Hazard, HazardTracker
from tilewise.sim.intrinsics import SMEM_ALIGN, SMEM_OPTIN_LIMIT, STATIC_SMEM_LIMIT, Intrinsics, align
from tilewise.sim.lang import RT, KernelInfo, rewrite
from tilewise.sim.lazy import LazyArray
from tilewise.sim.memory import GLOBAL_BASE, MemArray, Vec
from tilewise.sim.recording import SITE_FIELDS, AccessRecorder, SiteStats, touched_bytes

__all__ = [
    "MAX_GRID",
    "MAX_THREADS",
    "SITE_FIELDS",
    "SMEM_ALIGN",
    "SMEM_OPTIN_LIMIT",
    "STATIC_SMEM_LIMIT",
    "Device",
    "Executor",
    "Hazard",
    "Kernel",
    "SiteStats",
    "Trace",
    "current",
    "device",
    "kernel",
    "launch",
    "launch_shape",
    "sample_blocks",
]

MAX_THREADS = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)  # gridDim limits of every CUDA GPU since compute capability 3.0
# Steps (statements and loop tests, counted per block) before a block is called endless. A 32x32 tiled
# GEMM block with K = 8192 takes ~9,300; 100,000 steps of a loop that stores run in ~3 s on one core.
MAX_STEPS = 100_000
CHECK_EVERY = 4096  # steps between looks at the clock (perf_counter costs ~50 ns, a step ~2 us)

_CURRENT: list[Executor] = []


def current() -> Executor:
    if not _CURRENT:
        raise InputError("this is a kernel builtin: call it inside a @kernel function run by launch()")
    return _CURRENT[-1]


# ----------------------------------------------------------------------------- kernels


class Kernel:
    """A function written like a CUDA kernel; `launch(k, grid, block, *args)` runs it."""

    device = False

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._compiled = None
        self.info: KernelInfo | None = None

    def compiled(self) -> Any:
        if self._compiled is None:
            code, info = rewrite(self.fn, device=self.device)
            g = self.fn.__globals__
            if self.fn.__code__.co_freevars:  # a kernel defined inside a function: snapshot its closure
                g = dict(g)
                for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()):
                    g[name] = cell.cell_contents
            loc: dict[str, Any] = {}
            exec(code, g, loc)
            self._compiled = loc[info.name]
            self._globals = g
            self.info = info
        return self._compiled

    def __getitem__(self, config: Any) -> Any:
        grid, block = config[0], config[1]
        shared_bytes = config[2] if len(config) > 2 else 0
        return lambda *args, **kw: launch(self, grid, block, *args, shared_bytes=shared_bytes, **kw)

    def __call__(self, *args: Any, **kw: Any) -> Any:
        raise InputError(f"launch kernel {self.__name__} with launch(k, grid, block, ...) or k[grid, block](...)")


class Device(Kernel):
    """A helper called from kernels (a __device__ function); may return a value at its end."""

    device = True

    def __call__(self, *args: Any, **kw: Any) -> Any:
        f = self.compiled()
        self._globals[RT] = current()
        return f(*args, **kw)


def kernel(fn: Callable[..., Any]) -> Kernel:
    """Decorator: a CUDA-style kernel in Python (see tilewise.sim.lang for the rules)."""
    return Kernel(fn)


def device(fn: Callable[..., Any]) -> Device:
    """Decorator: a device function callable from kernels."""
    return Device(fn)


# ----------------------------------------------------------------------------- results


@dataclass
class Trace:
    kernel: str
    info: KernelInfo
    grid: tuple[Any, ...]
    block: tuple[Any, ...]
    blocks_total: int
    blocks_simulated: list[Any]
    seconds: float
    sites: dict[int, SiteStats]
    lines: dict[int, list[Any]]  # line -> [warp instructions, active lanes]
    hazards: list[Any]
    global_unique_bytes: dict[str, Any]  # "ld"/"st" -> distinct bytes touched in the simulated blocks
    shared_bytes: int


# ----------------------------------------------------------------------------- executor


class Executor(ControlFlow, AccessRecorder, HazardTracker, Intrinsics):
    """One launch in progress: the block being run, its mask stack, and everything recorded so far."""

    def __init__(
        self,
        kern: Kernel,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_dyn: int,
        hazards: bool,
        trace: bool,
        max_steps: int | None = MAX_STEPS,
        time_limit: float | None = None,
    ) -> None:
        self.kern = kern
        self.grid = grid
        self.block = block
        self.n = block[0] * block[1] * block[2]
        self.nwarps = -(-self.n // WARP)
        self.pad = self.nwarps * WARP - self.n
        t = np.arange(self.n, dtype=np.int64)
        self.tid = t
        self.tx = t % block[0]
        self.ty = (t // block[0]) % block[1]
        self.tz = t // (block[0] * block[1])
        self.lane = t % WARP
        self.shared_dyn = shared_dyn
        self.check_hazards = hazards
        self.tracing = trace
        self.sites: dict[int, SiteStats] = {}
        self.lines: dict[int, list[Any]] = defaultdict(lambda: [0, 0])
        self.hazards: dict[tuple[Any, ...], Hazard] = {}
        self.touched: dict[int, dict[str, Any]] = {}  # base address -> {"ld": bool array, "st": bool array}
        self.smem = np.empty(SMEM_OPTIN_LIMIT, dtype=np.uint8)
        self.max_shared = 0
        self.all_lanes = np.ones(self.n, dtype=bool)
        self.no_lanes = np.zeros(self.n, dtype=bool)
        self.synthetic: dict[int, tuple[Any, ...]] = {}  # builtin sites (atomics), keyed by -line
        self.max_steps = max_steps
        self.time_limit = time_limit
        self.deadline = None if time_limit is None else time.perf_counter() + time_limit
        self.steps = 0
        self.next_check = self._next_check()
        self.running = False  # True while launch() runs it: its arrays' A[i] are its load / store then

    # ---------------------------------------------------------------- block setup
    def start_block(self, bidx: tuple[Any, ...]) -> None:
        self.bidx = bidx
        self.steps = 0
        self.next_check = self._next_check()
        self.dead = self.no_lanes.copy()
        self.stack: list[Any] = []
        self.set_mask(self.all_lanes)
        self.smem[:] = 0xFF  # uninitialised shared memory: NaN for floats, -1 for ints
        self.static_cursor = align(self.shared_dyn, SMEM_ALIGN)
        self.static_bytes = 0
        self.epoch = 0
        self.wsync = np.zeros(self.nwarps, dtype=np.int32)  # __syncwarp() count per warp
        if self.check_hazards:
            self.reset_hazards(SMEM_OPTIN_LIMIT)

    # ---------------------------------------------------------------- limits
    def _next_check(self) -> int:
        nxt = self.steps + CHECK_EVERY
        return nxt if self.max_steps is None else min(nxt, self.max_steps + 1)

    def check_limits(self, line: int) -> None:
        """Stop a block that runs past the step limit, or a launch past its time limit (an endless loop)."""
        where = f"kernel {self.kern.__name__}, block {self.bidx}, line {line}"
        if self.max_steps is not None and self.steps > self.max_steps:
            raise InputError(
                f"{where}: the block ran more than {self.max_steps:,} steps without finishing (an endless loop?); "
                "allow more with max_steps= (tilewise trace --max-steps)"
            )
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise InputError(
                f"{where}: the launch ran longer than {self.time_limit:g} s (an endless loop?); "
                "allow more with time_limit= (tilewise trace --time-limit) or simulate fewer blocks (--sample)"
            )
        self.next_check = self._next_check()

    # ---------------------------------------------------------------- memory
    def index(self, obj: MemArray, idx: Any) -> Any:
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) > len(obj.shape):
            raise InputError(f"{obj.name} has {len(obj.shape)} dimension(s), indexed with {len(idx)}")
        off = obj.offset
        for i, (k, st) in enumerate(zip(idx, obj.strides)):
            if isinstance(k, np.ndarray):
                if not np.issubdtype(k.dtype, np.integer):
                    if k.dtype == bool:
                        k = k.astype(np.int64)
                    else:
                        raise InputError(f"index {i} of {obj.name} must be an integer, got {k.dtype}")
                if k.ndim == 0:
                    k = int(k)
            elif isinstance(k, (float, np.floating)):
                raise InputError(f"index {i} of {obj.name} must be an integer, got {k!r}")
            elif not isinstance(k, (int, np.integer)):
                raise InputError(f"index {i} of {obj.name} must be an integer, got {type(k).__name__}")
            off = off + k * st if st != 1 else off + k
        if len(idx) < len(obj.shape):
            return obj.view(off, obj.shape[len(idx) :])
        return off

    def load(self, obj: MemArray, idx: Any, site: int | None) -> Any:
        if not isinstance(obj, MemArray):
            return obj[idx]
        flat = self.index(obj, idx)
        if isinstance(flat, MemArray):
            return flat
        return self._access(obj, flat, site, "ld", None)

    def store(self, obj: MemArray, idx: Any, value: Any, site: int | None) -> Any:
        if not isinstance(obj, MemArray):
            obj[idx] = value
            return
        flat = self.index(obj, idx)
        if isinstance(flat, MemArray):
            raise InputError(f"{obj.name}: store needs an index for every dimension ({len(obj.shape)})")
        self._access(obj, flat, site, "st", value)

    def _access(self, obj: MemArray, flat: Any, site: int | None, op: str, value: Any) -> Any:
        m = self.mask
        n = self.n
        scalar = not isinstance(flat, np.ndarray)
        flatv = np.full(n, flat, dtype=np.int64) if scalar else flat.astype(np.int64, copy=False)
        size = obj.size
        oob_any = (flat < 0 or flat >= size) if scalar else bool(((flatv < 0) | (flatv >= size))[m].any())
        oob = (m & ((flatv < 0) | (flatv >= size))) if oob_any else None
        if oob is not None and oob.any():
            self.out_of_bounds(obj, flatv, oob, site)
        else:
            oob = None
        addr = obj.base + flatv * obj.unit_bytes
        if self.tracing and site is not None:
            self.record(site, obj, addr, m, op)
        ok = m if oob is None else (m & ~oob)
        if obj.space == "shared" and self.check_hazards and op != "atom":
            self.check_shared(obj, addr, ok, op, site)
        if obj.space == "global" and self.tracing:
            self.touch(obj, flatv, ok, op)
        if op == "ld":
            if scalar and oob is None:
                v = obj.data[flat]
                return Vec(np.array(v)) if obj.vec > 1 else v
            safe = flatv if oob is None else np.where(oob, 0, flatv)
            v = obj.data[np.clip(safe, 0, size - 1)]
            if oob is not None:
                v = v.copy()
                v[oob] = 0
            return Vec(v) if obj.vec > 1 else v
        # store
        if isinstance(value, Vec):
            value = value.v
        elif isinstance(value, (tuple, list)) and obj.vec > 1:
            value = np.stack(np.broadcast_arrays(*[np.asarray(p) for p in value]), axis=-1)
        val = np.asarray(value)
        shape = (n, obj.vec) if obj.vec > 1 else (n,)
        try:
            val = np.broadcast_to(val, shape)
        except ValueError:
            raise InputError(
                f"storing a value of shape {val.shape} into {obj.name} (per-thread shape {shape})"
            ) from None
        if ok.all():
            if scalar:
                obj.data[flat] = val[-1]
            else:
                obj.data[flatv] = val
        else:
            obj.data[flatv[ok]] = val[ok]
        return None


# ----------------------------------------------------------------------------- launch


def _dim3(name: str, v: Any) -> tuple[int, int, int]:
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    try:
        t = tuple(int(x) for x in v)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be an int or a tuple of up to 3 ints, got {v!r}") from None
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise InputError(f"{name} must be 1 to 3 positive ints, got {v!r}")
    x, y, z = (*t, 1, 1)[:3]
    return x, y, z


def launch_shape(grid: Any, block: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """grid and block as 3-tuples, checked against CUDA's limits (InputError naming the limit)."""
    grid = _dim3("grid", grid)
    block = _dim3("block", block)
    if any(g > lim for g, lim in zip(grid, MAX_GRID)):
        raise InputError(f"grid must be at most {MAX_GRID} blocks in (x, y, z), as on a CUDA GPU; got {grid}")
    nthreads = block[0] * block[1] * block[2]
    if nthreads > MAX_THREADS:
        raise InputError(f"block must have at most {MAX_THREADS} threads, got {block} = {nthreads}")
    if block[2] > 64:
        raise InputError(f"block z must be at most 64, got {block[2]}")
    return grid, block


def sample_blocks(grid: Any, sample: int | None) -> list[Any]:
    """The blocks a launch simulates, x fastest: all of them, or `sample` spread evenly over the grid.

    Only the chosen blocks are listed, so a sample of a 10^9-block grid costs what the sample costs.
    """
    total = grid[0] * grid[1] * grid[2]
    if sample is not None and sample < 1:
        raise InputError(f"sample must be a positive number of blocks, got {sample}")
    idx: range | list[int]
    if sample is None or sample >= total:
        idx = range(total)
    else:
        # evenly spaced, in exact integers (a grid can hold 2^63 blocks, past float64's 2^53)
        idx = sorted(
            {(k * (total - 1) * 2 + (sample - 1)) // (2 * (sample - 1)) for k in range(sample)} if sample > 1 else {0}
        )
    gx, gxy = grid[0], grid[0] * grid[1]
    return [(i % gx, i // gx % grid[1], i // gxy) for i in idx]


def launch(
    kern: Kernel,
    grid: Any,
    block: Any,
    *args: Any,
    shared_bytes: int = 0,
    sample: int | None = None,
    hazards: bool = True,
    trace: bool = True,
    max_steps: int | None = MAX_STEPS,
    time_limit: float | None = None,
) -> Trace:
    """Run `kern` over `grid` x `block` on numpy arrays (changed in place); return the Trace.

    grid, block: int or tuple of up to 3 ints (x fastest), like dim3.
    args: numpy arrays become global arrays (C-contiguous, flattened, 256-byte aligned addresses);
    other values are passed as they are (uniform across threads).
    shared_bytes: dynamic shared memory per block (read with dynamic_shared()).
    sample: simulate only this many blocks, spread over the grid (the others' outputs stay untouched).
    hazards: track shared-memory races, barrier divergence and out-of-bounds accesses.
    max_steps: statements (and loop tests) one block may run before it is stopped as endless (None: no limit).
    time_limit: seconds the whole launch may run (None: no limit). Either raises InputError naming the line.
    """
    if not isinstance(kern, Kernel) or isinstance(kern, Device):
        raise InputError(f"launch() needs a @kernel function, got {kern!r}")
    grid, block = launch_shape(grid, block)
    if not isinstance(shared_bytes, (int, np.integer)) or shared_bytes < 0 or shared_bytes > SMEM_OPTIN_LIMIT:
        raise InputError(f"shared_bytes must be an int in [0, {SMEM_OPTIN_LIMIT}], got {shared_bytes!r}")
    fn = kern.compiled()
    gargs: list[Any] = []
    addr = GLOBAL_BASE
    for i, a in enumerate(args):
        if isinstance(a, LazyArray):
            name = kern.fn.__code__.co_varnames[i] if i < kern.fn.__code__.co_argcount else f"arg{i}"
            gargs.append(MemArray("global", a.reshape(-1), addr, name))
            addr = align(addr + max(a.nbytes, 1), 256)
        elif isinstance(a, np.ndarray):
            if not a.flags.c_contiguous:
                raise InputError(f"argument {i} must be a C-contiguous numpy array (np.ascontiguousarray)")
            if a.ndim == 0:
                gargs.append(a[()])
                continue
            flat = a.reshape(-1)
            name = kern.fn.__code__.co_varnames[i] if i < kern.fn.__code__.co_argcount else f"arg{i}"
            gargs.append(MemArray("global", flat, addr, name))
            addr = align(addr + max(flat.nbytes, 1), 256)
        else:
            gargs.append(a)
    if max_steps is not None:
        max_steps = positive_int("max_steps", max_steps)
    if time_limit is not None:
        time_limit = fraction("time_limit", time_limit, low=1e-3, high=1e9)
    ex = Executor(kern, grid, block, int(shared_bytes), hazards, trace, max_steps, time_limit)
    blocks = sample_blocks(grid, sample)
    for g in gargs:
        if isinstance(g, MemArray):
            g.owner = ex
    kern._globals[RT] = ex
    _CURRENT.append(ex)
    ex.running = True
    t0 = time.perf_counter()
    try:
        for b in blocks:
            ex.start_block(b)
            fn(*gargs)
    finally:
        ex.running = False
        _CURRENT.pop()
    secs = time.perf_counter() - t0
    uniq = touched_bytes(ex.touched)
    assert kern.info is not None  # compiled above
    return Trace(
        kernel=kern.__name__,
        info=kern.info,
        grid=grid,
        block=block,
        blocks_total=grid[0] * grid[1] * grid[2],
        blocks_simulated=blocks,
        seconds=secs,
        sites=ex.sites,
        lines=dict(ex.lines),
        hazards=list(ex.hazards.values()),
        global_unique_bytes=uniq,
        shared_bytes=ex.max_shared,
    )
