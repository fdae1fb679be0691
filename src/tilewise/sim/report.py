"""The per-line report of a simulated launch: what each memory line costs, and what it should cost.

Ordered from the outside in: global memory (sectors per request, coalesced or not), shared memory
(wavefronts, bank conflicts, broadcasts), divergence (active lanes per warp instruction), then hazards.
"""

from __future__ import annotations

import os
from typing import Any

from tilewise.sim.access import SECTOR
from tilewise.sim.runtime import Trace

HAZARD_TEXT = {
    "RAW": "read-after-write between threads with no syncthreads() between them (in one warp: no syncwarp())",
    "WAR": "write-after-read between threads with no syncthreads() between them (in one warp: no syncwarp())",
    "WAW": "write-after-write between threads with no syncthreads() between them (in one warp: no syncwarp())",
    "sync-divergence": "syncthreads() reached by only some of the block's threads",
    "oob-global": "out-of-bounds global access",
    "oob-shared": "out-of-bounds shared access",
}


def _verdict_global(c: dict[str, Any], op: str = "ld") -> str:
    if c["inst"] == 0:
        return ""
    spr = c["sectors"] / max(1, c["requests"])
    if op == "atom":  # lanes on one address do not merge: they go one after another
        if c["sectors"] <= c["ideal"]:
            return f"atomic: {spr:.1f} sectors/request, each lane its own address"
        return (
            f"atomic: {spr:.1f} sectors/request for {c['ideal'] / c['inst']:.1f} ideal: lanes on one address "
            "go one after another (combine them in the warp first)"
        )
    if c["broadcasts"] == c["inst"]:
        return "broadcast: one address per warp"
    if c["sectors"] <= c["ideal"]:
        return f"coalesced: {spr:.1f} sectors/request, the ideal"
    return f"uncoalesced: {c['sectors'] / c['ideal']:.1f}x the ideal sectors ({c['sectors'] - c['ideal']} extra)"


def _verdict_shared(c: dict[str, Any], width: int, op: str = "ld") -> str:
    if c["inst"] == 0:
        return ""
    parts = []
    wf, inst = c["wavefronts"], c["inst"]
    if op == "atom":  # no broadcast for atomics: lanes on one bank go lane by lane
        if wf > c["ideal"]:
            return (
                f"atomic: {wf / inst:.1f} wavefronts/inst for {c['ideal'] / inst:.1f} ideal: lanes on one bank "
                "go one after another, same address or not"
            )
        return f"atomic: {wf / inst:.1f} wavefront/inst, no two lanes on one bank"
    if c["broadcasts"] == inst:
        parts.append("broadcast: one address per warp")
    elif c["multicasts"]:
        parts.append(f"multicast in {100 * c['multicasts'] / inst:.0f}% of instructions")
    if op == "ld" and width > 4:  # the measured pairing rule: tilewise.sim.shared_passes
        lanes = 128 // width
        if c.get("phases_paired"):
            parts.append(
                f"lanes pair by i^1 or i^2 in {c['phases_paired']}/{inst} inst: {lanes}-lane phases go two at a time"
            )
        else:
            parts.append(f"no lane pairing: {lanes}-lane phases go one at a time")
    if c["bank_conflicts"] > 0:
        parts.append(f"{wf / inst:.1f}-way bank conflict: {c['bank_conflicts']} extra wavefronts")
    elif wf > c["ideal"]:
        parts.append(
            f"{wf / inst:.1f} wavefronts/inst for {c['ideal'] / inst:.1f} ideal"
            + ("" if op == "ld" and width > 4 else f": {width}-byte lanes go in phases")
            + ", no bank conflict"
        )
    elif c["broadcasts"] != inst:
        parts.append(f"{c['banks'] / inst:.0f} banks, no conflict ({wf / inst:.0f} wavefront/inst)")
    return "; ".join(parts)


def report(trace: Trace) -> dict[str, Any]:
    """The report as a plain dict (what --json prints)."""
    info = trace.info
    sims = len(trace.blocks_simulated)
    lines_out = []
    tot = {
        "global_ld_sectors": 0,
        "global_st_sectors": 0,
        "global_atom_sectors": 0,
        "global_requests": 0,
        "global_ideal_sectors": 0,
        "shared_wavefronts": 0,
        "shared_ideal_wavefronts": 0,
        "shared_bank_conflicts": 0,
    }
    for st in sorted(trace.sites.values(), key=lambda s: (s.line, s.site if s.site >= 0 else 1 << 30)):
        c = st.counts
        if c["inst"] == 0:
            continue
        rec = {
            "line": st.line,
            "source": info.source_lines.get(st.line, "").strip(),
            "access": st.text,
            "array": st.array,
            "space": st.space,
            "op": st.op,
            "bytes_per_lane": st.width,
            "inst": c["inst"],
            "active_lanes": c["lanes"],
            "lane_efficiency": round(c["lanes"] / (32 * c["inst"]), 4),
            "broadcasts": c["broadcasts"],
            "multicasts": c["multicasts"],
        }
        if st.space == "shared":
            rec["banks_per_inst"] = round(c["banks"] / c["inst"], 2)
        if st.space == "global":
            rec.update(
                requests=c["requests"],
                sectors=c["sectors"],
                sectors_per_request=round(c["sectors"] / max(1, c["requests"]), 3),
                ideal_sectors=c["ideal"],
                verdict=_verdict_global(c, st.op),
            )
            tot["global_requests"] += c["requests"]
            tot["global_ideal_sectors"] += c["ideal"]
            tot[{"ld": "global_ld_sectors", "st": "global_st_sectors"}.get(st.op, "global_atom_sectors")] += c[
                "sectors"
            ]
        else:
            rec.update(
                wavefronts=c["wavefronts"],
                wavefronts_per_inst=round(c["wavefronts"] / c["inst"], 3),
                ideal_wavefronts=c["ideal"],
                bank_conflicts=c["bank_conflicts"],
                phases_paired=c["phases_paired"],
                verdict=_verdict_shared(c, st.width, st.op),
            )
            tot["shared_wavefronts"] += c["wavefronts"]
            tot["shared_ideal_wavefronts"] += c["ideal"]
            tot["shared_bank_conflicts"] += c["bank_conflicts"]
        lines_out.append(rec)
    div = []
    for line, (inst, lanes) in sorted(trace.lines.items()):
        if inst and lanes < 32 * inst:
            div.append(
                {
                    "line": line,
                    "source": info.source_lines.get(line, "").strip(),
                    "inst": inst,
                    "lane_efficiency": round(lanes / (32 * inst), 4),
                }
            )
    inst_all = sum(v[0] for v in trace.lines.values())
    lanes_all = sum(v[1] for v in trace.lines.values())
    moved = (tot["global_ld_sectors"] + tot["global_st_sectors"] + tot["global_atom_sectors"]) * SECTOR
    minimum = trace.global_unique_bytes["ld"] + trace.global_unique_bytes["st"]
    scale = trace.blocks_total / max(1, sims)
    totals = {
        **tot,
        "global_bytes_requested": moved,
        "global_bytes_minimum": minimum,
        "global_bytes_ratio": round(moved / minimum, 3) if minimum else None,
        "global_bytes_requested_full_grid_estimate": round(moved * scale),
        "warp_instructions": inst_all,
        "lane_efficiency": round(lanes_all / (32 * inst_all), 4) if inst_all else None,
    }
    hz = []
    for h in sorted(trace.hazards, key=lambda h: (h.line, h.kind)):
        hz.append(
            {
                "kind": h.kind,
                "what": HAZARD_TEXT.get(h.kind, h.kind),
                "line": h.line,
                "source": info.source_lines.get(h.line, "").strip(),
                "other_line": h.other_line,
                "other_source": info.source_lines.get(h.other_line, "").strip() if h.other_line else None,
                "array": h.array,
                "threads": h.count,
                "examples": [{k: (list(v) if isinstance(v, tuple) else v) for k, v in ex.items()} for ex in h.examples],
            }
        )
    return {
        "kernel": trace.kernel,
        "file": info.filename,
        "grid": list(trace.grid),
        "block": list(trace.block),
        "blocks_total": trace.blocks_total,
        "blocks_simulated": sims,
        "seconds": round(trace.seconds, 3),
        "shared_bytes_per_block": trace.shared_bytes,
        "lines": lines_out,
        "divergence": div,
        "totals": totals,
        "hazards": hz,
    }


def _trim(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def render_text(trace_or_report: Any) -> str:
    r = report(trace_or_report) if isinstance(trace_or_report, Trace) else trace_or_report
    out = []
    g, b = r["grid"], r["block"]
    nthreads = b[0] * b[1] * b[2]
    out.append(f"tilewise trace: {r['kernel']} ({os.path.relpath(r['file'])})")
    out.append(
        f"grid {tuple(g)} x block {tuple(b)}: {r['blocks_total']} blocks of {nthreads} threads "
        f"({-(-nthreads // 32)} warps); simulated {r['blocks_simulated']} of {r['blocks_total']} blocks "
        f"in {r['seconds']:.2f} s"
    )
    out.append(
        "All counts are totals over the simulated blocks, per warp instruction as Nsight Compute counts on an H200."
    )
    gl = [x for x in r["lines"] if x["space"] == "global"]
    sh = [x for x in r["lines"] if x["space"] == "shared"]
    if gl:
        out.append("")
        out.append("Global memory (32-byte sectors; a request is one warp instruction)")
        hdr = f"{'line':>4}  {'access':<34} {'op':<4} {'B':>2} {'inst':>7} {'active':>6} {'sectors':>8} {'sect/req':>8} {'ideal':>6}  verdict"
        out.append(hdr)
        for x in gl:
            out.append(
                f"{x['line']:>4}  {_trim(x['access'], 34):<34} {x['op']:<4} {x['bytes_per_lane']:>2} {x['inst']:>7} "
                f"{100 * x['lane_efficiency']:>5.0f}% {x['sectors']:>8} {x['sectors_per_request']:>8.2f} "
                f"{x['ideal_sectors'] / max(1, x['inst']):>6.2f}  {x['verdict']}"
            )
    if sh:
        out.append("")
        out.append("Shared memory (32 banks x 4 bytes; a wavefront is one pass through the banks)")
        hdr = f"{'line':>4}  {'access':<34} {'op':<4} {'B':>2} {'inst':>7} {'active':>6} {'wavefr.':>8} {'wf/inst':>8} {'ideal':>6} {'confl.':>7}  verdict"
        out.append(hdr)
        for x in sh:
            out.append(
                f"{x['line']:>4}  {_trim(x['access'], 34):<34} {x['op']:<4} {x['bytes_per_lane']:>2} {x['inst']:>7} "
                f"{100 * x['lane_efficiency']:>5.0f}% {x['wavefronts']:>8} {x['wavefronts_per_inst']:>8.2f} "
                f"{x['ideal_wavefronts'] / max(1, x['inst']):>6.2f} {x['bank_conflicts']:>7}  {x['verdict']}"
            )
    t = r["totals"]
    out.append("")
    out.append("Totals")
    if gl:
        ratio = f" = {t['global_bytes_ratio']:.2f}x" if t["global_bytes_ratio"] else ""
        out.append(
            f"  global: {t['global_ld_sectors']} load + {t['global_st_sectors']} store "
            + (f"+ {t['global_atom_sectors']} atomic " if t["global_atom_sectors"] else "")
            + "sectors "
            f"(ideal {t['global_ideal_sectors']}); {t['global_bytes_requested']:,} B requested against "
            f"{t['global_bytes_minimum']:,} B distinct{ratio} (each distinct byte once is the minimum)"
        )
        if r["blocks_simulated"] < r["blocks_total"]:
            out.append(
                f"  whole grid (scaled from the sample): ~{t['global_bytes_requested_full_grid_estimate']:,} B requested"
            )
    if sh:
        out.append(
            f"  shared: {t['shared_wavefronts']} wavefronts (ideal {t['shared_ideal_wavefronts']}), "
            f"{t['shared_bank_conflicts']} from bank conflicts"
        )
    if t["lane_efficiency"] is not None:
        out.append(f"  active lanes: {100 * t['lane_efficiency']:.1f}% of {t['warp_instructions']} warp instructions")
    if r["divergence"]:
        out.append("")
        out.append("Divergence (lines where warps ran with lanes masked off; the warp pays for every pass)")
        for d in r["divergence"]:
            out.append(
                f"{d['line']:>4}  {_trim(d['source'], 60):<60} {d['inst']:>7} inst {100 * d['lane_efficiency']:>5.1f}% active"
            )
    out.append("")
    if r["hazards"]:
        out.append(f"Hazards ({len(r['hazards'])})")
        for h in r["hazards"]:
            where = f"line {h['line']}: {h['source']}"
            out.append(f"  {h['kind']}: {h['what']}")
            out.append(f"    {where}")
            if h["other_line"]:
                out.append(f"    against line {h['other_line']}: {h['other_source']}")
            ex = h["examples"][0] if h["examples"] else {}
            desc = f"    {h['threads']} thread accesses"
            if ex:
                desc += f"; e.g. block {tuple(ex['block'])} thread {tuple(ex['thread'])}"
                if "other_thread" in ex:
                    desc += f" vs thread {tuple(ex['other_thread'])}"
                if "index" in ex:
                    desc += f", index {ex['index']} of {h['array']}"
            out.append(desc)
    else:
        out.append("Hazards: none (shared races, barrier divergence, out-of-bounds)")
    return "\n".join(out)
