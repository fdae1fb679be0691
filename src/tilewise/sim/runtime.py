"""The executor: runs a launch block by block, all threads of a block at once under a lane mask.

Per-thread values are numpy vectors over the block's threads (thread t = x + y*bx + z*bx*by; warp
t // 32, lane t % 32). Control flow that differs between threads runs both sides under masks (see
lang.py). Every memory instruction is cut into warps, and each warp with an active lane counts one
instruction whose active lanes' addresses go through the access rules (access.py). Shared-memory
accesses also go through the hazard tracker: per byte, the last writer and the readers since the last
`syncthreads()`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from tilewise.errors import InputError
from tilewise.sim.access import WARP, analyze_batch
from tilewise.sim.lang import RT, KernelInfo, rewrite
from tilewise.sim.memory import GLOBAL_BASE, MemArray, Vec

MAX_THREADS = 1024
STATIC_SMEM_LIMIT = 48 * 1024  # static __shared__ arrays: at most 48 KB (the tips document)
SMEM_OPTIN_LIMIT = 227 * 1024  # one block's shared memory on Hopper, opt-in
SMEM_ALIGN = 128

_CURRENT: list[Executor] = []


def current() -> Executor:
    if not _CURRENT:
        raise InputError("this is a kernel builtin: call it inside a @kernel function run by launch()")
    return _CURRENT[-1]


# ----------------------------------------------------------------------------- kernels


class Kernel:
    """A function written like a CUDA kernel; `launch(k, grid, block, *args)` runs it."""

    device = False

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._compiled = None
        self.info: KernelInfo | None = None

    def compiled(self):
        if self._compiled is None:
            code, info = rewrite(self.fn, device=self.device)
            g = self.fn.__globals__
            if self.fn.__code__.co_freevars:  # a kernel defined inside a function: snapshot its closure
                g = dict(g)
                for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()):
                    g[name] = cell.cell_contents
            loc: dict = {}
            exec(code, g, loc)
            self._compiled = loc[info.name]
            self._globals = g
            self.info = info
        return self._compiled

    def __getitem__(self, config):
        grid, block = config[0], config[1]
        shared_bytes = config[2] if len(config) > 2 else 0
        return lambda *args, **kw: launch(self, grid, block, *args, shared_bytes=shared_bytes, **kw)

    def __call__(self, *args, **kw):
        raise InputError(f"launch kernel {self.__name__} with launch(k, grid, block, ...) or k[grid, block](...)")


class Device(Kernel):
    """A helper called from kernels (a __device__ function); may return a value at its end."""

    device = True

    def __call__(self, *args, **kw):
        f = self.compiled()
        self._globals[RT] = current()
        return f(*args, **kw)


def kernel(fn) -> Kernel:
    """Decorator: a CUDA-style kernel in Python (see tilewise.sim.lang for the rules)."""
    return Kernel(fn)


def device(fn) -> Device:
    """Decorator: a device function callable from kernels."""
    return Device(fn)


# ----------------------------------------------------------------------------- results

SITE_FIELDS = (
    "inst",
    "lanes",
    "requests",
    "sectors",
    "ideal",
    "wavefronts",
    "bank_conflicts",
    "broadcasts",
    "multicasts",
    "bytes",
    "banks",
    "phases_paired",
)


@dataclass
class SiteStats:
    site: int
    line: int
    text: str
    space: str
    op: str  # ld / st / atom
    width: int
    array: str
    counts: dict = field(default_factory=lambda: dict.fromkeys(SITE_FIELDS, 0))


@dataclass
class Hazard:
    kind: str  # RAW, WAR, WAW, sync-divergence, oob-global, oob-shared
    line: int
    other_line: int | None
    array: str
    count: int = 0
    examples: list = field(default_factory=list)  # dicts: block, thread, other_thread, index


@dataclass
class Trace:
    kernel: str
    info: KernelInfo
    grid: tuple
    block: tuple
    blocks_total: int
    blocks_simulated: list
    seconds: float
    sites: dict
    lines: dict  # line -> [warp instructions, active lanes]
    hazards: list
    global_unique_bytes: dict  # "ld"/"st" -> distinct bytes touched in the simulated blocks
    shared_bytes: int


# ----------------------------------------------------------------------------- control-flow frames


class _IfFrame:
    __slots__ = ("base", "cond")

    def __init__(self, base, cond):
        self.base = base
        self.cond = cond


class _LoopFrame:
    __slots__ = ("active", "base", "broken", "cont", "dirty")

    def __init__(self, base):
        self.base = base
        self.active = base
        self.broken = None
        self.cont = None
        self.dirty = False


class _RangeIter:
    def __init__(self, rt, line, frame, start, stop, step):
        self.rt, self.line, self.frame = rt, line, frame
        self.k, self.stop, self.step = start, stop, step
        self.vector = isinstance(start, np.ndarray) or isinstance(stop, np.ndarray)
        self.first = True

    def __iter__(self):
        return self

    def __next__(self):
        rt, L = self.rt, self.frame
        if not self.first:
            self.k = self.k + self.step
        self.first = False
        if not self.vector:
            if (self.step > 0 and self.k >= self.stop) or (self.step < 0 and self.k <= self.stop):
                raise StopIteration
            if L.dirty:
                if not rt._loop_enter(L):
                    raise StopIteration
            rt.tick(self.line)
            return self.k
        if not rt._loop_enter(L):
            raise StopIteration
        c = (self.k < self.stop) if self.step > 0 else (self.k > self.stop)
        c = np.broadcast_to(c, (rt.n,))
        m = rt.mask & c
        L.active = L.active & (c | ~rt.mask)
        if not m.any():
            raise StopIteration
        rt._set_mask(m)
        rt.tick(self.line)
        return self.k if isinstance(self.k, np.ndarray) else np.full(rt.n, self.k, dtype=np.int64)


# ----------------------------------------------------------------------------- executor


class Executor:
    def __init__(self, kern: Kernel, grid, block, shared_dyn: int, hazards: bool, trace: bool):
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
        self.lines: dict[int, list] = defaultdict(lambda: [0, 0])
        self.hazards: dict[tuple, Hazard] = {}
        self.touched: dict[int, dict] = {}  # base address -> {"ld": bool array, "st": bool array}
        self.smem = np.empty(SMEM_OPTIN_LIMIT, dtype=np.uint8)
        self.max_shared = 0
        self._ones = np.ones(self.n, dtype=bool)
        self._zeros = np.zeros(self.n, dtype=bool)

    # ---------------------------------------------------------------- block setup
    def start_block(self, bidx: tuple):
        self.bidx = bidx
        self.dead = self._zeros.copy()
        self.stack: list = []
        self._set_mask(self._ones)
        self.smem[:] = 0xFF  # uninitialised shared memory: NaN for floats, -1 for ints
        self.static_cursor = _align(self.shared_dyn, SMEM_ALIGN)
        self.static_bytes = 0
        self.epoch = 0
        self.wsync = np.zeros(self.nwarps, dtype=np.int32)  # __syncwarp() count per warp
        if self.check_hazards:
            size = SMEM_OPTIN_LIMIT
            self.h_wsync = np.zeros(size, dtype=np.int32)  # the writer's warp's syncwarp count at the write
            self.h_rsync = np.zeros(size, dtype=np.int32)  # the last reader's warp's syncwarp count at the read
            self.h_wthread = np.full(size, -1, dtype=np.int32)
            self.h_wepoch = np.full(size, -1, dtype=np.int32)
            self.h_wline = np.zeros(size, dtype=np.int32)
            self.h_repoch = np.full(size, -1, dtype=np.int32)
            self.h_rmin = np.zeros(size, dtype=np.int32)
            self.h_rmax = np.zeros(size, dtype=np.int32)
            self.h_rline = np.zeros(size, dtype=np.int32)

    # ---------------------------------------------------------------- masks
    def _set_mask(self, m):
        self.mask = m
        alive_off = ~self.dead & ~m
        self.full = not alive_off.any()
        if self.tracing:
            if self.pad:
                mm = np.concatenate([m, np.zeros(self.pad, dtype=bool)])
            else:
                mm = m
            self._warps_active = int(mm.reshape(self.nwarps, WARP).any(axis=1).sum())
            self._lanes_active = int(np.count_nonzero(m))

    def _blocked(self, upto: int | None = None):
        """Dead threads plus those that left (break/continue) a loop on the stack below `upto`."""
        b = self.dead
        for f in self.stack[:upto]:
            if isinstance(f, _LoopFrame):
                if f.broken is not None:
                    b = b | f.broken
                if f.cont is not None:
                    b = b | f.cont
        return b

    def tick(self, line):
        if self.tracing:
            rec = self.lines[line]
            rec[0] += self._warps_active
            rec[1] += self._lanes_active

    def merge(self, new, old):
        if old is None:
            return new
        m = self.mask
        if isinstance(new, Vec) or isinstance(old, Vec):
            nv = new.v if isinstance(new, Vec) else np.asarray(new)
            ov = old.v if isinstance(old, Vec) else np.asarray(old)
            return Vec(np.where(m[:, None], nv, ov))
        if not isinstance(new, np.ndarray) and not isinstance(old, np.ndarray):
            try:
                if new == old:
                    return new
            except (TypeError, ValueError):
                return new
        if isinstance(new, (MemArray, list, tuple, str)) or isinstance(old, (MemArray, list, tuple, str)):
            return new  # not a per-thread value
        nv = np.asarray(new)
        ov = np.asarray(old)
        if nv.ndim > 1 or ov.ndim > 1:
            return np.where(m.reshape(-1, *([1] * (max(nv.ndim, ov.ndim) - 1))), nv, ov)
        return np.where(m, nv, ov)

    def _cond(self, c):
        """A condition as a bool vector, or a Python bool if it is uniform over the active threads."""
        if isinstance(c, np.ndarray) and c.ndim >= 1:
            c = c.astype(bool, copy=False)
            if c.shape != (self.n,):
                raise InputError(f"a condition must be one value per thread, got shape {c.shape}")
            return c
        if isinstance(c, Vec):
            raise InputError("a vector value (float4) cannot be a condition")
        return bool(c)

    def branch(self, c, line):
        self.tick(line)
        c = self._cond(c)
        if not isinstance(c, np.ndarray):
            return 1 if c else 0
        m = self.mask
        t = m & c
        if not t.any():
            return 0
        if not (m & ~c).any():
            return 1
        self.stack.append(_IfFrame(m, c))
        self._set_mask(t)
        return 2

    def flip(self):
        f = self.stack[-1]
        self._set_mask(f.base & ~f.cond & ~self._blocked(len(self.stack) - 1))

    def pop(self):
        f = self.stack.pop()
        self._set_mask(f.base & ~self._blocked())

    # loops
    def loop_push(self):
        self.stack.append(_LoopFrame(self.mask))

    def _loop_enter(self, L: _LoopFrame) -> bool:
        """Start an iteration: threads that `continue`d come back; returns whether any thread is left."""
        if not L.dirty:
            if self.mask is not L.active:
                self._set_mask(L.active)
            return bool(self._lanes_active) if self.tracing else bool(L.active.any())
        L.cont = None
        blocked = self._blocked(len(self.stack) - 1)
        if L.broken is not None:
            blocked = blocked | L.broken
        L.active = L.active & ~blocked
        self._set_mask(L.active)
        L.dirty = False
        L.broken = None
        return bool(L.active.any())

    def loop_iter(self, line):
        L = self.stack[-1]
        ok = self._loop_enter(L)
        if ok:
            self.tick(line)
        return ok

    def loop_cond(self, c):
        L = self.stack[-1]
        c = self._cond(c)
        if not isinstance(c, np.ndarray):
            return c
        m = self.mask & c
        if (self.mask & ~c).any():
            L.active = m
            self._set_mask(m)
        return bool(m.any())

    def loop_pop(self):
        f = self.stack.pop()
        self._set_mask(f.base & ~self._blocked())

    def for_range(self, line, *args):
        if len(args) == 1:
            start, stop, step = 0, args[0], 1
        elif len(args) == 2:
            start, stop, step = args[0], args[1], 1
        elif len(args) == 3:
            start, stop, step = args
        else:
            raise InputError(f"line {line}: range() takes 1 to 3 arguments, got {len(args)}")
        if isinstance(step, np.ndarray):
            if np.all(step == step.flat[0]):
                step = step.flat[0]
            else:
                raise InputError(f"line {line}: the step of range() must be the same for every thread")
        step = int(step)
        if step == 0:
            raise InputError(f"line {line}: range() step must not be zero")
        for v in (start, stop):
            if isinstance(v, (float, np.floating)):
                raise InputError(f"line {line}: range() needs integers, got {v!r}")
        L = _LoopFrame(self.mask)
        self.stack.append(L)
        if isinstance(start, np.ndarray) and start.ndim == 0:
            start = int(start)
        if isinstance(stop, np.ndarray) and stop.ndim == 0:
            stop = int(stop)
        return _RangeIter(self, line, L, start, stop, step)

    def _innermost_loop(self, what):
        for i in range(len(self.stack) - 1, -1, -1):
            if isinstance(self.stack[i], _LoopFrame):
                return i
        raise InputError(f"'{what}' outside a loop")

    def brk(self):
        i = self._innermost_loop("break")
        L = self.stack[i]
        if i == len(self.stack) - 1:
            return True  # every thread still in the loop breaks: an ordinary break
        L.broken = self.mask if L.broken is None else (L.broken | self.mask)
        L.dirty = True
        self._set_mask(self._zeros)
        return False

    def cont(self):
        i = self._innermost_loop("continue")
        L = self.stack[i]
        if i == len(self.stack) - 1:
            return True
        L.cont = self.mask if L.cont is None else (L.cont | self.mask)
        L.dirty = True
        self._set_mask(self._zeros)
        return False

    def exit(self):
        self.dead = self.dead | self.mask
        for f in self.stack:
            if isinstance(f, _LoopFrame):
                f.dirty = True
        self._set_mask(self._zeros)
        return not (~self.dead).any()

    # expressions
    def ifexp(self, c, a, b):
        c = self._cond(c)
        if not isinstance(c, np.ndarray):
            return a() if c else b()
        m = self.mask
        t, e = m & c, m & ~c
        if not e.any():
            return a()
        if not t.any():
            return b()
        self._set_mask(t)
        va = a()
        self._set_mask(e)
        vb = b()
        self._set_mask(m)
        if isinstance(va, Vec) or isinstance(vb, Vec):
            va = va.v if isinstance(va, Vec) else np.asarray(va)
            vb = vb.v if isinstance(vb, Vec) else np.asarray(vb)
            return Vec(np.where(c[:, None], va, vb))
        return np.where(c, va, vb)

    def land(self, a, fb):
        a = self._cond(a)
        if not isinstance(a, np.ndarray):
            return fb() if a else False
        m = self.mask
        t = m & a
        if not t.any():
            return a
        self._set_mask(t)
        b = self._cond(fb())
        self._set_mask(m)
        return a & b

    def lor(self, a, fb):
        a = self._cond(a)
        if not isinstance(a, np.ndarray):
            return True if a else fb()
        m = self.mask
        e = m & ~a
        if not e.any():
            return a
        self._set_mask(e)
        b = self._cond(fb())
        self._set_mask(m)
        return a | b

    def lnot(self, a):
        a = self._cond(a)
        return ~a if isinstance(a, np.ndarray) else not a

    # element-wise builtins (the rewriter sends min/max/int/float/abs here)
    @staticmethod
    def vmin(*a):
        if any(isinstance(x, np.ndarray) for x in a):
            return np.minimum.reduce(np.broadcast_arrays(*a)) if len(a) > 1 else np.min(a[0])
        return min(*a)

    @staticmethod
    def vmax(*a):
        if any(isinstance(x, np.ndarray) for x in a):
            return np.maximum.reduce(np.broadcast_arrays(*a)) if len(a) > 1 else np.max(a[0])
        return max(*a)

    @staticmethod
    def vint(x=0):
        if isinstance(x, np.ndarray):
            return np.trunc(x).astype(np.int64) if x.dtype.kind == "f" else x.astype(np.int64)
        return int(x)

    @staticmethod
    def vfloat(x=0.0):
        if isinstance(x, np.ndarray):
            return x.astype(np.float32) if x.dtype.kind in "iub" else x
        return float(x)

    @staticmethod
    def vabs(x):
        return abs(x)

    # ---------------------------------------------------------------- memory
    def _index(self, obj: MemArray, idx):
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

    def load(self, obj, idx, site):
        if not isinstance(obj, MemArray):
            return obj[idx]
        flat = self._index(obj, idx)
        if isinstance(flat, MemArray):
            return flat
        return self._access(obj, flat, site, "ld", None)

    def store(self, obj, idx, value, site):
        if not isinstance(obj, MemArray):
            obj[idx] = value
            return
        flat = self._index(obj, idx)
        if isinstance(flat, MemArray):
            raise InputError(f"{obj.name}: store needs an index for every dimension ({len(obj.shape)})")
        self._access(obj, flat, site, "st", value)

    def _access(self, obj: MemArray, flat, site, op, value):
        m = self.mask
        n = self.n
        scalar = not isinstance(flat, np.ndarray)
        flatv = np.full(n, flat, dtype=np.int64) if scalar else flat.astype(np.int64, copy=False)
        size = obj.size
        oob_any = (flat < 0 or flat >= size) if scalar else bool(((flatv < 0) | (flatv >= size))[m].any())
        oob = (m & ((flatv < 0) | (flatv >= size))) if oob_any else None
        if oob is not None and oob.any():
            self._oob(obj, flatv, oob, site)
        else:
            oob = None
        addr = obj.base + flatv * obj.unit_bytes
        if self.tracing and site is not None:
            self._record(site, obj, addr, m, op)
        ok = m if oob is None else (m & ~oob)
        if obj.space == "shared" and self.check_hazards and op != "atom":
            self._hazards(obj, addr, ok, op, site)
        if obj.space == "global" and self.tracing:
            self._touch(obj, flatv, ok, op)
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

    def atomic(self, kind, obj, idx, value, line):
        if not isinstance(obj, MemArray):
            raise InputError(f"atomic_{kind} needs a global or shared array, got {type(obj).__name__}")
        flat = self._index(obj, idx)
        if isinstance(flat, MemArray):
            raise InputError(f"atomic_{kind}: {obj.name} needs an index for every dimension")
        m = self.mask
        flatv = np.broadcast_to(np.asarray(flat, dtype=np.int64), (self.n,))
        oob = m & ((flatv < 0) | (flatv >= obj.size))
        if oob.any():
            self._oob(obj, flatv, oob, None, line)
        ok = m & ~oob
        site = self._line_site(line, f"atomic_{kind}({obj.name}, ...)")
        if self.tracing:
            how = _atomic_how(kind, obj)
            r = self._record(site, obj, obj.base + flatv * obj.unit_bytes, m, "atom", how)
            if how == "loop" and r is not None:
                self._record_cas_loop(site, line, obj, r)
        if obj.space == "global" and self.tracing:
            self._touch(obj, flatv, ok, "st")
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

    def _record_cas_loop(self, site, line, obj: MemArray, r):
        """A shared float32 / 8-byte atomic_add is an LDS + ATOMS.CAST loop on the GPU (access.py `_cas_loop`).
        The atomic's own site counts the ATOMS.CAST wavefronts of all passes (Nsight Compute's op_atom) and,
        like every site, one instruction per warp that calls it; a second site on the same line, op "ld",
        counts the loop's LDS (op_ld): one instruction per pass, so its `inst` is the loop's trip count."""
        key = -line - (1 << 40)  # a synthetic site of its own, next to the atomic's (-line)
        if key not in self._synthetic:
            self._synthetic[key] = (line, f"{self._synthetic[site][1]} (CAS loop: LDS)")
        d = self._site(key, obj, "ld").counts
        d["inst"] += r["passes"]
        d["lanes"] += r["ld_lanes"]
        d["bytes"] += r["ld_lanes"] * obj.unit_bytes
        d["ideal"] += r["ld_ideal"]
        d["wavefronts"] += r["ld_wavefronts"]
        d["bank_conflicts"] += r["ld_bank_conflicts"]
        d["banks"] += r["ld_banks"]

    def _line_site(self, line, text):
        key = -line  # synthetic sites for builtins, keyed by line
        if key not in self._synthetic:
            self._synthetic[key] = (line, text)
        return key

    # statistics
    def _site(self, site, obj: MemArray, op) -> SiteStats:
        """The statistics of one source site (a kernel line's access, or a builtin's synthetic one)."""
        st = self.sites.get(site)
        if st is None:
            if site >= 0:
                s = self.kern.info.sites[site]
                line, text = s.line, s.text
            else:
                line, text = self._synthetic[site]
            st = self.sites[site] = SiteStats(site, line, text, obj.space, op, obj.unit_bytes, obj.name)
        return st

    def _record(self, site, obj: MemArray, addr, m, op, atomic=True):
        st = self._site(site, obj, op)
        if self.pad:
            addr = np.concatenate([addr, np.zeros(self.pad, dtype=np.int64)])
            m = np.concatenate([m, np.zeros(self.pad, dtype=bool)])
        a2 = addr.reshape(self.nwarps, WARP)
        m2 = m.reshape(self.nwarps, WARP)
        rows = m2.any(axis=1)
        if not rows.any():
            return
        if not rows.all():
            a2, m2 = a2[rows], m2[rows]
        r = _cached_analysis(a2, m2, obj.unit_bytes, obj.space, op == "st", atomic if op == "atom" else False)
        c = st.counts
        c["inst"] += r["inst"]
        c["lanes"] += r["lanes"]
        c["bytes"] += r["lanes"] * obj.unit_bytes
        c["ideal"] += r["ideal"]
        c["broadcasts"] += r["broadcasts"]
        c["multicasts"] += r["multicasts"]
        c["banks"] += r["banks"]
        if obj.space == "global":
            c["requests"] += r["requests"]
            c["sectors"] += r["sectors"]
        else:
            c["wavefronts"] += r["wavefronts"]
            c["bank_conflicts"] += r["bank_conflicts"]
            c["phases_paired"] += r.get("phases_paired", 0)
        return r

    def _touch(self, obj: MemArray, flatv, ok, op):
        rec = self.touched.get(obj.base)
        if rec is None:
            n = obj.data.size
            rec = self.touched[obj.base] = {
                "ld": np.zeros(n, bool),
                "st": np.zeros(n, bool),
                "itemsize": obj.dtype.itemsize,
            }
        idx = flatv[ok]
        if obj.vec > 1:
            idx = (idx[:, None] * obj.vec + np.arange(obj.vec)).ravel()
        rec[op][idx] = True

    # ---------------------------------------------------------------- hazards
    def _thread(self, t):
        return (int(self.tx[t]), int(self.ty[t]), int(self.tz[t]))

    def _hazard(self, kind, line, other_line, array, lanes, others=None, index=None):
        key = (kind, line, other_line, array)
        h = self.hazards.get(key)
        if h is None:
            h = self.hazards[key] = Hazard(kind, line, other_line, array)
        h.count += len(lanes)
        for j, t in enumerate(lanes[: max(0, 3 - len(h.examples))]):
            ex = {"block": self.bidx, "thread": self._thread(int(t))}
            if others is not None:
                ex["other_thread"] = self._thread(int(others[j]))
            if index is not None:
                ex["index"] = int(index[j])
            h.examples.append(ex)

    def _oob(self, obj, flatv, oob, site, line=None):
        if not self.check_hazards:
            return
        if line is None:
            line = self._site_line(site)
        lanes = np.flatnonzero(oob)
        kind = "oob-global" if obj.space == "global" else "oob-shared"
        self._hazard(kind, line, None, obj.name, lanes, index=flatv[lanes])

    def _site_line(self, site):
        if site is None:
            return 0
        if site >= 0:
            return self.kern.info.sites[site].line
        return self._synthetic[site][0]

    def _hazards(self, obj: MemArray, addr, ok, op, site):
        lanes = np.flatnonzero(ok)
        if not len(lanes):
            return
        w = obj.unit_bytes
        b = (addr[lanes][:, None] + np.arange(w)).ravel()
        t = np.repeat(lanes, w).astype(np.int32)
        e = self.epoch
        line = self._site_line(site)
        warp = t // WARP
        cur = self.wsync[warp]  # a __syncwarp() orders accesses of one warp, not of two
        if op == "ld":
            # RAW: written since the last barrier by another thread (not one of this warp before a syncwarp)
            ordered = (self.h_wthread[b] // WARP == warp) & (cur > self.h_wsync[b])
            hz = (self.h_wepoch[b] == e) & (self.h_wthread[b] != t) & ~ordered
            if hz.any():
                self._report_pairs("RAW", line, b, t, hz, self.h_wthread, self.h_wline, obj)
            stale = self.h_repoch[b] != e
            if stale.any():
                sb = b[stale]
                self.h_rmin[sb] = np.iinfo(np.int32).max
                self.h_rmax[sb] = -1
                self.h_repoch[sb] = e
            np.minimum.at(self.h_rmin, b, t)
            np.maximum.at(self.h_rmax, b, t)
            self.h_rline[b] = line
            self.h_rsync[b] = cur
        else:
            # WAR: read since the last barrier by another thread; WAW: written by another thread. Readers all
            # of this warp, every read before this warp's last syncwarp, are ordered.
            r_ordered = (self.h_rmin[b] // WARP == warp) & (self.h_rmax[b] // WARP == warp) & (cur > self.h_rsync[b])
            war = (self.h_repoch[b] == e) & ((self.h_rmin[b] != t) | (self.h_rmax[b] != t)) & ~r_ordered
            if war.any():
                other = np.where(self.h_rmin[b] != t, self.h_rmin[b], self.h_rmax[b])
                self._report_pairs("WAR", line, b, t, war, None, self.h_rline, obj, other)
            w_ordered = (self.h_wthread[b] // WARP == warp) & (cur > self.h_wsync[b])
            waw = (self.h_wepoch[b] == e) & (self.h_wthread[b] != t) & ~w_ordered
            if waw.any():
                self._report_pairs("WAW", line, b, t, waw, self.h_wthread, self.h_wline, obj)
            self.h_wepoch[b] = e
            self.h_wthread[b] = t
            self.h_wline[b] = line
            self.h_wsync[b] = cur

    def _report_pairs(self, kind, line, b, t, hz, owner, lines_arr, obj, other=None):
        idx = np.flatnonzero(hz)
        # one report per thread (not per byte)
        threads, first = np.unique(t[idx], return_index=True)
        idx = idx[first]
        others = other[idx] if other is not None else owner[b[idx]]
        other_lines = lines_arr[b[idx]]
        for ol in np.unique(other_lines):
            sel = other_lines == ol
            self._hazard(
                kind, line, int(ol), obj.name, threads[sel], others[sel], (b[idx][sel] - obj.base) // obj.unit_bytes
            )

    def syncwarp(self, line):
        """__syncwarp(): orders the shared-memory accesses of each warp with an active lane (the warp's
        lanes, not the mask's subset: a partial mask is taken as the whole warp)."""
        self.tick(line)
        m = self.mask if not self.pad else np.concatenate([self.mask, np.zeros(self.pad, dtype=bool)])
        self.wsync += m.reshape(self.nwarps, WARP).any(axis=1)

    def sync(self, line):
        self.tick(line)
        live = ~self.dead
        off = live & ~self.mask
        if off.any() and self.check_hazards:
            on = np.flatnonzero(self.mask)
            offl = np.flatnonzero(off)
            others = np.resize(offl, len(on)) if len(offl) else on
            self._hazard("sync-divergence", line, None, "", on, others)
        self.epoch += 1

    # ---------------------------------------------------------------- shared allocation
    def alloc_shared(self, shape, dtype, name):
        dt = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        n = int(np.prod(shape))
        off = _align(self.static_cursor, max(16, dt.itemsize))
        end = off + n * dt.itemsize
        self.static_bytes = end - _align(self.shared_dyn, SMEM_ALIGN)
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
        return MemArray("shared", data, off, name, shape)

    def dynamic_shared(self, dtype, name):
        dt = np.dtype(dtype)
        n = self.shared_dyn // dt.itemsize
        if n == 0:
            raise InputError("dynamic_shared() needs launch(..., shared_bytes=N) with N > 0")
        self.max_shared = max(self.max_shared, self.shared_dyn)
        return MemArray("shared", self.smem[: n * dt.itemsize].view(dt), 0, name, (n,))

    # ---------------------------------------------------------------- warp-level builtins
    def shfl(self, var, kind, arg, width):
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

    def vote(self, kind, pred):
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


def _atomic_how(kind, obj: MemArray):
    """How the GPU does atomic_<kind> on obj (the `atomic=` of access.py), as ptxas compiled it on sm_90
    (round 5): an add on a shared float32 or 8-byte array is a compare-and-swap loop ("loop": measured for
    float32 and 64-bit integers; float64 assumed the same); everything else is one instruction (True)."""
    if (
        obj.space == "shared"
        and kind == "add"
        and obj.vec == 1
        and (obj.dtype == np.float32 or obj.dtype.itemsize == 8)
    ):
        return "loop"
    return True


def _align(x, a):
    return -(-x // a) * a


_CACHE: dict = {}


def _cached_analysis(a2, m2, width, space, store, atomic=False):
    """analyze_batch summed over warps, memoised on the pattern relative to each warp's 1 KB-aligned base."""
    base = np.where(m2, a2, np.int64(1) << 62).min(axis=1, keepdims=True) // 1024 * 1024
    rel = np.where(m2, a2 - base, -1)
    key = (space, width, store, atomic, rel.tobytes())
    r = _CACHE.get(key)
    if r is None:
        res = analyze_batch(rel, m2, width, space, store, atomic)
        lanes = m2.sum(axis=1)
        from tilewise.sim.access import _distinct_per_row

        d = _distinct_per_row(rel, m2)
        r = {k: int(v.sum()) for k, v in res.items()}
        r["inst"] = len(a2)
        r["lanes"] = int(lanes.sum())
        r["broadcasts"] = int(((lanes >= 2) & (d == 1)).sum())
        r["multicasts"] = int(((d < lanes) & (d > 1)).sum())
        if space == "shared":  # every bank a lane's bytes touch (a 16-byte lane covers 4)
            from tilewise.sim.access import _lane_words

            words, wvalid = _lane_words(rel, m2, width)
            r["banks"] = int(_distinct_per_row(words % 32, wvalid).sum())
        else:
            r["banks"] = 0
        if len(_CACHE) > 20000:
            _CACHE.clear()
        _CACHE[key] = r
    return r


# ----------------------------------------------------------------------------- launch


def _dim3(name, v):
    if isinstance(v, (int, np.integer)):
        v = (int(v),)
    try:
        t = tuple(int(x) for x in v)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be an int or a tuple of up to 3 ints, got {v!r}") from None
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise InputError(f"{name} must be 1 to 3 positive ints, got {v!r}")
    return t + (1,) * (3 - len(t))


def sample_blocks(grid, sample: int | None) -> list:
    blocks = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    if sample is None or sample >= len(blocks):
        return blocks
    if sample < 1:
        raise InputError(f"sample must be a positive number of blocks, got {sample}")
    idx = np.unique(np.linspace(0, len(blocks) - 1, sample).round().astype(int))
    return [blocks[i] for i in idx]


def launch(
    kern: Kernel,
    grid,
    block,
    *args,
    shared_bytes: int = 0,
    sample: int | None = None,
    hazards: bool = True,
    trace: bool = True,
) -> Trace:
    """Run `kern` over `grid` x `block` on numpy arrays (changed in place); return the Trace.

    grid, block: int or tuple of up to 3 ints (x fastest), like dim3.
    args: numpy arrays become global arrays (C-contiguous, flattened, 256-byte aligned addresses);
    other values are passed as they are (uniform across threads).
    shared_bytes: dynamic shared memory per block (read with dynamic_shared()).
    sample: simulate only this many blocks, spread over the grid (the others' outputs stay untouched).
    hazards: track shared-memory races, barrier divergence and out-of-bounds accesses.
    """
    if not isinstance(kern, Kernel) or isinstance(kern, Device):
        raise InputError(f"launch() needs a @kernel function, got {kern!r}")
    grid = _dim3("grid", grid)
    block = _dim3("block", block)
    nthreads = block[0] * block[1] * block[2]
    if nthreads > MAX_THREADS:
        raise InputError(f"block must have at most {MAX_THREADS} threads, got {block} = {nthreads}")
    if block[2] > 64:
        raise InputError(f"block z must be at most 64, got {block[2]}")
    if not isinstance(shared_bytes, (int, np.integer)) or shared_bytes < 0 or shared_bytes > SMEM_OPTIN_LIMIT:
        raise InputError(f"shared_bytes must be an int in [0, {SMEM_OPTIN_LIMIT}], got {shared_bytes!r}")
    fn = kern.compiled()
    gargs = []
    addr = GLOBAL_BASE
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            if not a.flags.c_contiguous:
                raise InputError(f"argument {i} must be a C-contiguous numpy array (np.ascontiguousarray)")
            if a.ndim == 0:
                gargs.append(a[()])
                continue
            flat = a.reshape(-1)
            name = kern.fn.__code__.co_varnames[i] if i < kern.fn.__code__.co_argcount else f"arg{i}"
            gargs.append(MemArray("global", flat, addr, name))
            addr = _align(addr + max(flat.nbytes, 1), 256)
        else:
            gargs.append(a)
    ex = Executor(kern, grid, block, int(shared_bytes), hazards, trace)
    ex._synthetic = {}
    blocks = sample_blocks(grid, sample)
    kern._globals[RT] = ex
    _CURRENT.append(ex)
    t0 = time.perf_counter()
    try:
        for b in blocks:
            ex.start_block(b)
            fn(*gargs)
    finally:
        _CURRENT.pop()
    secs = time.perf_counter() - t0
    uniq = {"ld": 0, "st": 0}
    for rec in ex.touched.values():
        for op in ("ld", "st"):
            uniq[op] += int(rec[op].sum()) * rec["itemsize"]
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
