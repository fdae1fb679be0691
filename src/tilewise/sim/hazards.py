"""Hazards: shared-memory races, barriers reached by only part of a block, out-of-bounds accesses.

Per byte of shared memory the tracker keeps the last writer (thread, line, barrier epoch, the writer's
warp's `__syncwarp()` count) and the range of readers since the last `syncthreads()`. An access by
another thread in the same epoch with no ordering between them is a RAW, WAR or WAW hazard; a
`__syncwarp()` orders the accesses of one warp, never of two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tilewise.sim.memory import MemArray

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilewise.sim.access import WARP
from tilewise.sim.state import LaunchState


@dataclass
class Hazard:
    kind: str  # RAW, WAR, WAW, sync-divergence, oob-global, oob-shared
    line: int
    other_line: int | None
    array: str
    count: int = 0
    examples: list[Any] = field(default_factory=list)  # dicts: block, thread, other_thread, index


EXAMPLES_PER_HAZARD = 3


class HazardTracker(LaunchState):
    """The executor's hazard bookkeeping (a mixin of runtime.Executor: bidx, tx/ty/tz, mask, dead, epoch,
    wsync, hazards, check_hazards and site_line from the recorder)."""

    def reset_hazards(self, size: int) -> None:
        """Forget every access: a new block starts with untouched shared memory of `size` bytes."""
        self.h_wsync = np.zeros(size, dtype=np.int32)  # the writer's warp's syncwarp count at the write
        self.h_rsync = np.zeros(size, dtype=np.int32)  # the last reader's warp's syncwarp count at the read
        self.h_wthread = np.full(size, -1, dtype=np.int32)
        self.h_wepoch = np.full(size, -1, dtype=np.int32)
        self.h_wline = np.zeros(size, dtype=np.int32)
        self.h_repoch = np.full(size, -1, dtype=np.int32)
        self.h_rmin = np.zeros(size, dtype=np.int32)
        self.h_rmax = np.zeros(size, dtype=np.int32)
        self.h_rline = np.zeros(size, dtype=np.int32)

    def thread_coords(self, t: Any) -> tuple[int, int, int]:
        return (int(self.tx[t]), int(self.ty[t]), int(self.tz[t]))

    def hazard(
        self, kind: str, line: int, other_line: Any, array: Any, lanes: Any, others: Any = None, index: Any = None
    ) -> None:
        """Count `lanes` (thread ids) as hitting one hazard; keep the first few as examples."""
        key = (kind, line, other_line, array)
        h = self.hazards.get(key)
        if h is None:
            h = self.hazards[key] = Hazard(kind, line, other_line, array)
        h.count += len(lanes)
        for j, t in enumerate(lanes[: max(0, EXAMPLES_PER_HAZARD - len(h.examples))]):
            ex: dict[str, Any] = {"block": self.bidx, "thread": self.thread_coords(int(t))}
            if others is not None:
                ex["other_thread"] = self.thread_coords(int(others[j]))
            if index is not None:
                ex["index"] = int(index[j])
            h.examples.append(ex)

    def out_of_bounds(self, obj: MemArray, flatv: Any, oob: Any, site: int | None, line: int | None = None) -> None:
        if not self.check_hazards:
            return
        if line is None:
            line = self.site_line(site)
        lanes = np.flatnonzero(oob)
        kind = "oob-global" if obj.space == "global" else "oob-shared"
        self.hazard(kind, line, None, obj.name, lanes, index=flatv[lanes])

    def check_shared(self, obj: MemArray, addr: Any, ok: Any, op: str, site: int | None) -> None:
        """Check one shared load or store of the lanes in `ok` against the bytes' history, then record it."""
        lanes = np.flatnonzero(ok)
        if not len(lanes):
            return
        w = obj.unit_bytes
        b = (addr[lanes][:, None] + np.arange(w)).ravel()
        t = np.repeat(lanes, w).astype(np.int32)
        e = self.epoch
        line = self.site_line(site)
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

    def _report_pairs(
        self,
        kind: str,
        line: int,
        b: Any,
        t: Any,
        hz: Any,
        owner: Any,
        lines_arr: Any,
        obj: MemArray,
        other: Any = None,
    ) -> None:
        idx = np.flatnonzero(hz)
        # one report per thread (not per byte)
        threads, first = np.unique(t[idx], return_index=True)
        idx = idx[first]
        others = other[idx] if other is not None else owner[b[idx]]
        other_lines = lines_arr[b[idx]]
        for ol in np.unique(other_lines):
            sel = other_lines == ol
            self.hazard(
                kind, line, int(ol), obj.name, threads[sel], others[sel], (b[idx][sel] - obj.base) // obj.unit_bytes
            )

    # ---------------------------------------------------------------- barriers
    def syncwarp(self, line: int) -> None:
        """__syncwarp(): orders the shared-memory accesses of each warp with an active lane (the warp's
        lanes, not the mask's subset: a partial mask is taken as the whole warp)."""
        self.tick(line)
        m = self.mask if not self.pad else np.concatenate([self.mask, np.zeros(self.pad, dtype=bool)])
        self.wsync += m.reshape(self.nwarps, WARP).any(axis=1)

    def sync(self, line: int) -> None:
        """syncthreads(): a new epoch; live threads outside the mask make it a sync-divergence hazard."""
        self.tick(line)
        live = ~self.dead
        off = live & ~self.mask
        if off.any() and self.check_hazards:
            on = np.flatnonzero(self.mask)
            offl = np.flatnonzero(off)
            others = np.resize(offl, len(on)) if len(offl) else on
            self.hazard("sync-divergence", line, None, "", on, others)
        self.epoch += 1
