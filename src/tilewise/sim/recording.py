"""Access recording: what each memory site of a kernel cost, warp instruction by warp instruction.

Every memory instruction is cut into warps; each warp with an active lane counts one instruction whose
active lanes' addresses go through the access rules of access.py (sectors and requests for global
memory, wavefronts and bank conflicts for shared memory). The counts add up per source site (one
`X[i]` expression in the kernel) or, for builtins such as atomics, per line. Global arrays also keep
which elements were read and written, for the report's distinct-bytes figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilewise.sim import lazy
from tilewise.sim.access import WARP, analyze_batch, distinct_per_row, lane_words
from tilewise.sim.lang import KernelInfo
from tilewise.sim.memory import MemArray
from tilewise.sim.state import LaunchState

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
    counts: dict[str, Any] = field(default_factory=lambda: dict[str, Any].fromkeys(SITE_FIELDS, 0))


def atomic_how(kind: str, obj: MemArray) -> bool | str:
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


_CACHE: dict[tuple[Any, ...], Any] = {}
_CACHE_LIMIT = 20000  # distinct warp patterns kept; a tiled GEMM has a few dozen


def cached_analysis(a2: Any, m2: Any, width: int, space: str, store: bool, atomic: bool | str = False) -> Any:
    """analyze_batch summed over warps, memoised on the pattern relative to each warp's 1 KB-aligned base."""
    base = np.where(m2, a2, np.int64(1) << 62).min(axis=1, keepdims=True) // 1024 * 1024
    rel = np.where(m2, a2 - base, -1)
    key = (space, width, store, atomic, rel.tobytes())
    r = _CACHE.get(key)
    if r is None:
        res = analyze_batch(rel, m2, width, space, store, atomic)
        lanes = m2.sum(axis=1)
        d = distinct_per_row(rel, m2)
        r = {k: int(v.sum()) for k, v in res.items()}
        r["inst"] = len(a2)
        r["lanes"] = int(lanes.sum())
        r["broadcasts"] = int(((lanes >= 2) & (d == 1)).sum())
        r["multicasts"] = int(((d < lanes) & (d > 1)).sum())
        if space == "shared":  # every bank a lane's bytes touch (a 16-byte lane covers 4)
            words, wvalid = lane_words(rel, m2, width)
            r["banks"] = int(distinct_per_row(words % 32, wvalid).sum())
        else:
            r["banks"] = 0
        if len(_CACHE) > _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[key] = r
    return r


class AccessRecorder(LaunchState):
    """The executor's per-site statistics (a mixin of runtime.Executor: kern, n, nwarps, pad, sites,
    synthetic, touched)."""

    def _info(self) -> KernelInfo:
        info = self.kern.info
        assert info is not None  # launch() compiled the kernel before running it
        return info

    def line_site(self, line: int, text: str) -> int:
        """The synthetic site of a builtin (an atomic) on `line`: one per line, keyed -line."""
        key = -line
        if key not in self.synthetic:
            self.synthetic[key] = (line, text)
        return key

    def site_line(self, site: int | None) -> int:
        """The source line of a site (0 for an access from outside the kernel's own expressions)."""
        if site is None:
            return 0
        if site >= 0:
            return self._info().sites[site].line
        return int(self.synthetic[site][0])

    def site_stats(self, site: int, obj: MemArray, op: str) -> SiteStats:
        """The statistics of one source site (a kernel line's access, or a builtin's synthetic one)."""
        st = self.sites.get(site)
        if st is None:
            if site >= 0:
                s = self._info().sites[site]
                line, text = s.line, s.text
            else:
                line, text = self.synthetic[site]
            st = self.sites[site] = SiteStats(site, line, text, obj.space, op, obj.unit_bytes, obj.name)
        return st

    def record(self, site: int, obj: MemArray, addr: Any, m: Any, op: str, atomic: bool | str = True) -> Any:
        """Count one instruction of every warp with an active lane at `site`; return the summed analysis."""
        st = self.site_stats(site, obj, op)
        if self.pad:
            addr = np.concatenate([addr, np.zeros(self.pad, dtype=np.int64)])
            m = np.concatenate([m, np.zeros(self.pad, dtype=bool)])
        a2 = addr.reshape(self.nwarps, WARP)
        m2 = m.reshape(self.nwarps, WARP)
        rows = m2.any(axis=1)
        if not rows.any():
            return None
        if not rows.all():
            a2, m2 = a2[rows], m2[rows]
        r = cached_analysis(a2, m2, obj.unit_bytes, obj.space, op == "st", atomic if op == "atom" else False)
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

    def record_cas_loop(self, site: int, line: int, obj: MemArray, r: Any) -> None:
        """A shared float32 / 8-byte atomic_add is an LDS + ATOMS.CAST loop on the GPU (access.py `_cas_loop`).
        The atomic's own site counts the ATOMS.CAST wavefronts of all passes (Nsight Compute's op_atom) and,
        like every site, one instruction per warp that calls it; a second site on the same line, op "ld",
        counts the loop's LDS (op_ld): one instruction per pass, so its `inst` is the loop's trip count."""
        key = -line - (1 << 40)  # a synthetic site of its own, next to the atomic's (-line)
        if key not in self.synthetic:
            self.synthetic[key] = (line, f"{self.synthetic[site][1]} (CAS loop: LDS)")
        d = self.site_stats(key, obj, "ld").counts
        d["inst"] += r["passes"]
        d["lanes"] += r["ld_lanes"]
        d["bytes"] += r["ld_lanes"] * obj.unit_bytes
        d["ideal"] += r["ld_ideal"]
        d["wavefronts"] += r["ld_wavefronts"]
        d["bank_conflicts"] += r["ld_bank_conflicts"]
        d["banks"] += r["ld_banks"]

    def touch(self, obj: MemArray, flatv: Any, ok: Any, op: str) -> None:
        """Mark the global elements the active, in-bounds lanes read ("ld") or wrote ("st")."""
        rec = self.touched.get(obj.base)
        if rec is None:
            n = obj.data.size
            rec = self.touched[obj.base] = {
                "ld": lazy.zeros(n, bool),  # a LazyArray for a big array: only the touched pages exist
                "st": lazy.zeros(n, bool),
                "itemsize": obj.dtype.itemsize,
            }
        idx = flatv[ok]
        if obj.vec > 1:
            idx = (idx[:, None] * obj.vec + np.arange(obj.vec)).ravel()
        rec[op][idx] = True


def touched_bytes(touched: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Distinct global bytes read ("ld") and written ("st") over every array, from AccessRecorder.touch."""
    out = {"ld": 0, "st": 0}
    for rec in touched.values():
        for op in ("ld", "st"):
            marks = rec[op]
            n = marks.made_sum() if isinstance(marks, lazy.LazyArray) else marks.sum()
            out[op] += int(n) * rec["itemsize"]
    return out
