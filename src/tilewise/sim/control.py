"""Lane masks and control flow: how a whole block runs Python `if`/`while`/`for` on per-thread values.

The executor holds one boolean mask over the block's threads (thread t = x + y*bx + z*bx*by). A branch
whose condition differs between active threads runs both sides, each under its own mask, as a warp does
on the GPU; a loop keeps going while any thread's condition holds; `break`, `continue` and `return`
take threads out of the mask until the loop (or the kernel) ends. The rewriter in lang.py turns the
kernel's statements into calls of the methods below (RT.branch, RT.loop_iter, RT.merge, ...).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tilewise.errors import InputError
from tilewise.sim.access import WARP
from tilewise.sim.memory import MemArray, Vec
from tilewise.sim.state import LaunchState


class IfFrame:
    """An `if` whose condition split the active threads: the mask before it and the condition."""

    __slots__ = ("base", "cond")

    def __init__(self, base: Any, cond: Any) -> None:
        self.base = base
        self.cond = cond


class LoopFrame:
    """A loop on the mask stack: who entered, who is still iterating, who broke or continued."""

    __slots__ = ("active", "base", "broken", "cont", "dirty")

    def __init__(self, base: Any) -> None:
        self.base = base
        self.active = base
        self.broken = None
        self.cont = None
        self.dirty = False


class RangeIter:
    """`for i in range(...)`: uniform bounds iterate like Python; per-thread bounds narrow the mask."""

    def __init__(self, rt: Any, line: int, frame: Any, start: Any, stop: Any, step: Any) -> None:
        self.rt, self.line, self.frame = rt, line, frame
        self.k, self.stop, self.step = start, stop, step
        self.vector = isinstance(start, np.ndarray) or isinstance(stop, np.ndarray)
        self.first = True

    def __iter__(self) -> Any:
        return self

    def __next__(self) -> Any:
        rt, L = self.rt, self.frame
        if not self.first:
            self.k = self.k + self.step
        self.first = False
        if not self.vector:
            if (self.step > 0 and self.k >= self.stop) or (self.step < 0 and self.k <= self.stop):
                raise StopIteration
            if L.dirty:
                if not rt.loop_enter(L):
                    raise StopIteration
            rt.tick(self.line)
            return self.k
        if not rt.loop_enter(L):
            raise StopIteration
        c = (self.k < self.stop) if self.step > 0 else (self.k > self.stop)
        c = np.broadcast_to(c, (rt.n,))
        m = rt.mask & c
        L.active = L.active & (c | ~rt.mask)
        if not m.any():
            raise StopIteration
        rt.set_mask(m)
        rt.tick(self.line)
        return self.k if isinstance(self.k, np.ndarray) else np.full(rt.n, self.k, dtype=np.int64)


class ControlFlow(LaunchState):
    """The executor's mask stack (a mixin of runtime.Executor, which sets n, nwarps, pad, tracing, lines).

    `full` is True when every live thread is active, so the rewritten `x = v` needs no merge.
    """

    # ---------------------------------------------------------------- masks
    def set_mask(self, m: Any) -> None:
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

    def blocked(self, upto: int | None = None) -> Any:
        """Dead threads plus those that left (break/continue) a loop on the stack below `upto`."""
        b = self.dead
        for f in self.stack[:upto]:
            if isinstance(f, LoopFrame):
                if f.broken is not None:
                    b = b | f.broken
                if f.cont is not None:
                    b = b | f.cont
        return b

    def tick(self, line: int) -> None:
        """One statement (or loop test) on `line`: counted for the report and against the step limit."""
        self.steps += 1
        if self.steps >= self.next_check:
            self.check_limits(line)
        if self.tracing:
            rec = self.lines[line]
            rec[0] += self._warps_active
            rec[1] += self._lanes_active

    def merge(self, new: Any, old: Any) -> Any:
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

    def _cond(self, c: Any) -> Any:
        """A condition as a bool vector, or a Python bool if it is uniform over the active threads."""
        if isinstance(c, np.ndarray) and c.ndim >= 1:
            c = c.astype(bool, copy=False)
            if c.shape != (self.n,):
                raise InputError(f"a condition must be one value per thread, got shape {c.shape}")
            return c
        if isinstance(c, Vec):
            raise InputError("a vector value (float4) cannot be a condition")
        return bool(c)

    # ---------------------------------------------------------------- if / else
    def branch(self, c: Any, line: int) -> Any:
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
        self.stack.append(IfFrame(m, c))
        self.set_mask(t)
        return 2

    def flip(self) -> None:
        f = self.stack[-1]
        self.set_mask(f.base & ~f.cond & ~self.blocked(len(self.stack) - 1))

    def pop(self) -> None:
        f = self.stack.pop()
        self.set_mask(f.base & ~self.blocked())

    # ---------------------------------------------------------------- loops
    def loop_push(self) -> None:
        self.stack.append(LoopFrame(self.mask))

    def loop_enter(self, L: LoopFrame) -> bool:
        """Start an iteration: threads that `continue`d come back; returns whether any thread is left."""
        if not L.dirty:
            if self.mask is not L.active:
                self.set_mask(L.active)
            return bool(self._lanes_active) if self.tracing else bool(L.active.any())
        L.cont = None
        blocked = self.blocked(len(self.stack) - 1)
        if L.broken is not None:
            blocked = blocked | L.broken
        L.active = L.active & ~blocked
        self.set_mask(L.active)
        L.dirty = False
        L.broken = None
        return bool(L.active.any())

    def loop_iter(self, line: int) -> Any:
        L = self.stack[-1]
        ok = self.loop_enter(L)
        if ok:
            self.tick(line)
        return ok

    def loop_cond(self, c: Any) -> Any:
        L = self.stack[-1]
        c = self._cond(c)
        if not isinstance(c, np.ndarray):
            return c
        m = self.mask & c
        if (self.mask & ~c).any():
            L.active = m
            self.set_mask(m)
        return bool(m.any())

    def loop_pop(self) -> None:
        f = self.stack.pop()
        self.set_mask(f.base & ~self.blocked())

    def for_range(self, line: int, *args: Any) -> Any:
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
        L = LoopFrame(self.mask)
        self.stack.append(L)
        if isinstance(start, np.ndarray) and start.ndim == 0:
            start = int(start)
        if isinstance(stop, np.ndarray) and stop.ndim == 0:
            stop = int(stop)
        return RangeIter(self, line, L, start, stop, step)

    def _innermost_loop(self, what: str) -> int:
        for i in range(len(self.stack) - 1, -1, -1):
            if isinstance(self.stack[i], LoopFrame):
                return i
        raise InputError(f"'{what}' outside a loop")

    def _leave_loop(self, what: str, slot: Any) -> bool:
        """`break` or `continue` by the active lanes. Straight inside the loop every thread still in it
        leaves together: True, the ordinary statement. Under a branch the active lanes are parked in the
        loop frame's `slot` and go idle: "broken" ones leave the loop at its next test (`loop_enter`),
        "cont" ones rejoin at its next iteration."""
        i = self._innermost_loop(what)
        L = self.stack[i]
        if i == len(self.stack) - 1:
            return True
        parked = getattr(L, slot)
        setattr(L, slot, self.mask if parked is None else (parked | self.mask))
        L.dirty = True
        self.set_mask(self.no_lanes)
        return False

    def brk(self) -> bool:
        return self._leave_loop("break", "broken")

    def cont(self) -> bool:
        return self._leave_loop("continue", "cont")

    def exit(self) -> bool:
        self.dead = self.dead | self.mask
        for f in self.stack:
            if isinstance(f, LoopFrame):
                f.dirty = True
        self.set_mask(self.no_lanes)
        return not (~self.dead).any()

    # ---------------------------------------------------------------- expressions
    def ifexp(self, c: Any, a: Any, b: Any) -> Any:
        c = self._cond(c)
        if not isinstance(c, np.ndarray):
            return a() if c else b()
        m = self.mask
        t, e = m & c, m & ~c
        if not e.any():
            return a()
        if not t.any():
            return b()
        self.set_mask(t)
        va = a()
        self.set_mask(e)
        vb = b()
        self.set_mask(m)
        if isinstance(va, Vec) or isinstance(vb, Vec):
            va = va.v if isinstance(va, Vec) else np.asarray(va)
            vb = vb.v if isinstance(vb, Vec) else np.asarray(vb)
            return Vec(np.where(c[:, None], va, vb))
        return np.where(c, va, vb)

    def land(self, a: Any, fb: Any) -> Any:
        a = self._cond(a)
        if not isinstance(a, np.ndarray):
            return fb() if a else False
        m = self.mask
        t = m & a
        if not t.any():
            return a
        self.set_mask(t)
        b = self._cond(fb())
        self.set_mask(m)
        return a & b

    def lor(self, a: Any, fb: Any) -> Any:
        a = self._cond(a)
        if not isinstance(a, np.ndarray):
            return True if a else fb()
        m = self.mask
        e = m & ~a
        if not e.any():
            return a
        self.set_mask(e)
        b = self._cond(fb())
        self.set_mask(m)
        return a | b

    def lnot(self, a: Any) -> Any:
        a = self._cond(a)
        return ~a if isinstance(a, np.ndarray) else not a
