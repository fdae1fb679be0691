"""Exercises: a problem, the reader's answer, then the model's answer and why.

One source of truth: every answer is what a panel's endpoint returns for the problem's inputs
(`registry.call`, so the same model function the panel draws), never a number written here.
A topic holds a few variants (the problem's inputs); `variant` picks one, modulo their count.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import tilewise.web.panels  # noqa: F401  (registers the panels the exercises ask)
from tilewise.errors import InputError
from tilewise.web.params import Params
from tilewise.web.registry import call

LIMIT_WORDS = {
    "warps": "warps",
    "registers": "registers",
    "shared_memory": "shared memory",
    "blocks": "blocks",
    "barriers": "barriers",
}


@dataclass(frozen=True)
class Exercise:
    topic: str
    panel: str
    variants: tuple[dict[str, str], ...]
    pose: Callable[
        [dict[str, str]], dict[str, Any]
    ]  # inputs -> question, kind, options, unit, answer, tolerance, reasoning


def _q(inputs: dict[str, str], panel: str) -> dict[str, Any]:
    return call(panel, inputs)


def _number(question: str, answer: float, reasoning: list[str], unit: str = "", tolerance: float = 0) -> dict[str, Any]:
    """A question answered by a number, right within `tolerance` of `answer`."""
    return {
        "question": question,
        "kind": "number",
        "unit": unit,
        "answer": answer,
        "tolerance": tolerance,
        "reasoning": reasoning,
    }


def _choice(
    question: str, options: list[list[str]], answer: str, accept: list[str], reasoning: list[str]
) -> dict[str, Any]:
    """A question answered by one of `options` ([key, words] pairs); any key in `accept` is right."""
    return {
        "question": question,
        "kind": "choice",
        "options": options,
        "answer": answer,
        "accept": accept,
        "reasoning": reasoning,
    }


# --------------------------------------------------------------------------- access (banks, sectors)


def _access(v: dict[str, str]) -> dict[str, Any]:
    d = _q(v, "access")
    c = d["counts"]
    if d["space"] == "shared":
        ans = c["wavefronts"]
        lanes_per_bank = max(d["bank_words"])
        why = [
            f"Lane i reads index `{d['expr']}`, {d['width']} bytes per lane; bank = (byte address / 4) mod 32.",
            f"The busiest bank is asked for {lanes_per_bank} distinct word(s); a bank serves one word per cycle, "
            f"same-word lanes share it (a broadcast).",
            f"So the access takes {ans} wavefront(s) and {c['bank_conflicts']} bank conflict(s) (ideal: {c['ideal']}).",
        ]
        q = f"A warp reads shared memory at index `{d['expr']}` ({d['width']}-byte elements). How many wavefronts does this access take?"
    else:
        ans = c["sectors"]
        why = [
            f"Lane i reads index `{d['expr']}`, {d['width']} bytes per lane; a sector is {d['sector_bytes']} bytes.",
            f"The 32 addresses fall in {ans} distinct sector(s), one request (ideal: {c['ideal']}).",
        ]
        q = f"A warp reads global memory at index `{d['expr']}` ({d['width']}-byte elements). How many 32-byte sectors does it move?"
    return _number(q, ans, why)


# --------------------------------------------------------------------------------------- occupancy


def _occupancy(v: dict[str, str]) -> dict[str, Any]:
    d = _q(v, "occupancy")
    o = d["result"]
    limits = ", ".join(
        f"{LIMIT_WORDS[k]} {'no limit' if x is None else x}" for k, x in o["limits"].items() if k in LIMIT_WORDS
    )
    why = [
        f"Blocks per SM each limit allows: {limits}.",
        f"The tightest wins: {o['blocks_per_sm']} block(s) of {o['warps_per_block']} warps, "
        f"{o['warps_per_sm']} of {o['max_warps_per_sm']} warp slots ({100 * o['occupancy']:.0f}% occupancy).",
    ]
    if len(o["limiters"]) > 1:
        why.append("Tied: " + " and ".join(LIMIT_WORDS[x] for x in o["limiters"]) + " (either answer is right).")
    q = (
        f"On the {d['gpu']['name']}, a kernel launches {v['threads']} threads per block, {v['registers']} registers "
        f"per thread and {int(v['smem']) // 1024} KB of shared memory. Which limit binds?"
    )
    return _choice(q, [[k, w] for k, w in LIMIT_WORDS.items() if k in o["limits"]], o["limiter"], o["limiters"], why)


# ----------------------------------------------------------------------------------------- latency


def _latency(v: dict[str, str]) -> dict[str, Any]:
    d = _q(v, "latency")
    c = d["current"]
    why = [
        f"Little's law: bytes in flight = latency x throughput = {c['latency_cycles']:.0f} cycles x "
        f"{c['throughput_per_cycle']:.1f} B/cycle per SM = {c['in_flight_needed']:,.0f} B.",
        f"Each warp has {c['per_warp']:.0f} B in flight ({v['width']} B per lane x 32 lanes x ILP {v['ilp']}), "
        f"so {c['warps_needed']} warps; the SM holds {c['resident_warps']} at this size ({c['limiter']} bind).",
    ]
    q = (
        f"Each thread keeps {v['ilp']} independent {v['width']}-byte load(s) in flight against {v['latency']} cycles of "
        f"memory latency on the {d['gpu']['name']}. How many warps per SM must be in flight to hide it?"
    )
    return _number(q, c["warps_needed"], why, unit="warps")


# ----------------------------------------------------------------------------------------- feeding


def _feeding(v: dict[str, str]) -> dict[str, Any]:
    if "n" in v:
        return _feed_ratio(v)
    d = _q(v, "tensorcore")
    table = d["table"]["ss"]
    first = next(r for r in table if r["keeps_up"])
    why = [
        f"A wgmma of 64 x N x 16 ({v['dtype']}) computes for N/2 cycles; in SS form it reads A "
        f"({table[0]['a_bytes']} B) and B (N x 16 elements) from shared memory at {first['smem_bytes_per_cycle']} B/cycle.",
        f"The feed keeps up once compute >= feed: at N = {first['n']}, {first['compute_cycles']:.0f} compute cycles vs "
        f"{first['feed_cycles']:.0f} feed cycles (ratio {first['ratio']:.2f}).",
    ]
    q = f"In SS form ({v['dtype']}), what is the smallest wgmma N whose compute covers its shared-memory feed (ratio >= 1)?"
    return _number(q, first["n"], why)


def _feed_ratio(v: dict[str, str]) -> dict[str, Any]:
    d = _q(v, "tensorcore")
    ss = d["ss"]
    why = [
        f"Compute: 64 x {ss['n']} x 16 x 2 FLOPs at the SM's rate = {ss['compute_cycles']:.0f} cycles.",
        f"Feed in SS form: A {ss['a_bytes']} B ({ss['a_cycles']:.0f} cycles, paid by every instruction) + "
        f"B {ss['b_bytes']} B ({ss['b_cycles']:.0f} cycles) at {ss['smem_bytes_per_cycle']} B/cycle = {ss['feed_cycles']:.0f} cycles.",
        f"Ratio {ss['compute_cycles']:.0f} / {ss['feed_cycles']:.0f} = {ss['ratio']:.2f}: "
        + ("shared memory keeps up." if ss["keeps_up"] else "the Tensor Cores wait for their operands."),
    ]
    q = (
        f"A wgmma m64 n{v['n']} k16 ({v['dtype']}) with both operands from shared memory (SS): what is its "
        "compute / feed ratio (compute cycles over shared-memory cycles)?"
    )
    return _number(q, round(ss["ratio"], 2), why, tolerance=0.02)


# --------------------------------------------------------------------------------------- registers


def _registers(v: dict[str, str]) -> dict[str, Any]:
    d = _q(v, "registers")
    fit = [r for r in d["curve"] if r["fits"]]
    best = fit[-1]
    why = [
        f"One consumer warpgroup holds S and P (64 x N), the O accumulator (64 x {v['head_dim']}) and statistics: "
        f"at N = {best['block_n']}, {best['total']:.0f} registers per thread of {best['limit']}.",
        f"The next N ({best['block_n'] + 16}) would pass {best['limit']}; so N <= {best['block_n']}.",
    ]
    q = (
        f"Attention with head dim {v['head_dim']}: what is the largest KV tile N (a multiple of 16) whose "
        "registers fit one consumer warpgroup's 255-per-thread budget?"
    )
    return _number(q, best["block_n"], why)


# ---------------------------------------------------------------------------------------------- L2


def _l2(v: dict[str, str]) -> dict[str, Any]:
    d = _q(v, "l2")
    c = d["current"]
    pct = 100 * c["needed_hit_rate"]
    why = [
        f"A Q tile of M = {v['m']} rows against a K/V tile does {d['kv']['intensity']:.0f} FLOP per K/V byte "
        "(N and d cancel, M remains).",
        f"The HBM balance is {c['balance']:.0f} FLOP/B; with hit rate h only (1 - h) of the bytes reach HBM, so "
        f"{d['kv']['intensity']:.0f} / (1 - h) >= {c['balance']:.0f} needs h >= {pct:.1f}%.",
    ]
    q = f"On the {d['gpu']['name']}, what L2 hit rate (in %) must K/V reads reach for M = {v['m']} to be compute-bound?"
    return _number(q, round(pct, 1), why, unit="%", tolerance=1.0)


# ---------------------------------------------------------------------------------------- pipeline


def _pipeline(v: dict[str, str]) -> dict[str, Any]:
    d = _q(v, "pipeline")
    ds = d["designs"]
    best = max(ds, key=lambda t: t["tensor_utilisation"])
    why = [
        f"{t['title']}: Tensor Cores busy {100 * t['tensor_utilisation']:.1f}% of {t['makespan']:,.0f} cycles."
        for t in ds
    ]
    why.append(f"Best: {best['title']}.")
    q = (
        f"Attention tiles of N = {v['n']} with a {round(100 * float(v['hit']))}% L2 hit rate and {v['stages']} stage(s): "
        "which design keeps the Tensor Cores busiest?"
    )
    accept = [t["design"] for t in ds if math.isclose(t["tensor_utilisation"], best["tensor_utilisation"])]
    return _choice(q, [[t["design"], t["title"]] for t in ds], best["design"], accept, why)


# ------------------------------------------------------------------------------------------ decode


def _decode(v: dict[str, str]) -> dict[str, Any]:
    d = _q(v, "decode")
    b = d["batch_for_compute_bound"]
    cur = d["current"]
    why = [
        f"C[batch, n] = A[batch, k] W[k, n]: the weights ({v['n']} x {v['k']}) are read once whatever the batch, "
        "so intensity grows about linearly with the batch.",
        f"The {d['gpu']['name']}'s balance is {cur['balance']:.0f} FLOP/B; the intensity reaches it at batch ~{b:.0f}.",
    ]
    q = f"The decode GEMM with n = {v['n']}, k = {v['k']} ({v['dtype']}): from what batch is it compute-bound on the {d['gpu']['name']}?"
    return _number(q, round(b), why, tolerance=max(2, round(0.03 * b)))


# --------------------------------------------------------------------------------------------- MoE


def _moe(v: dict[str, str]) -> dict[str, Any]:
    d = _q(v, "moe")
    s = d["schedule"]
    why = [
        f"Each expert's rows are cut into BLOCK_M = {s['block_m']} tiles: m tiles = ceil(rows / {s['block_m']}) = "
        f"{s['m_tiles']}; N = {s['n']} in BLOCK_N = {s['block_n']} gives {s['n_tiles']} n tile(s).",
        f"Tiles per expert {s['tiles_per_expert']}, total {s['total_tiles']} (an expert with 0 rows gets none).",
    ]
    q = (
        f"Experts receive rows {v['rows']} (BLOCK_M = {v['block_m']}, N = {v['n']}, BLOCK_N = {v['block_n']}). "
        "How many tiles does the persistent grouped GEMM schedule?"
    )
    return _number(q, s["total_tiles"], why, unit="tiles")


EXERCISES: dict[str, Exercise] = {
    e.topic: e
    for e in (
        Exercise(
            "access",
            "access",
            (
                {"space": "shared", "expr": "(lane // 2) * 32"},
                {"space": "shared", "expr": "lane * 33"},
                {"space": "shared", "expr": "lane * 2"},
                {"space": "global", "expr": "lane * 8"},
                {"space": "shared", "expr": "lane * 32"},
            ),
            _access,
        ),
        Exercise(
            "occupancy",
            "occupancy",
            (
                {"gpu": "h100-sxm", "threads": "256", "registers": "128", "smem": "32768"},
                {"gpu": "h100-sxm", "threads": "128", "registers": "32", "smem": "102400"},
                {"gpu": "h100-sxm", "threads": "64", "registers": "32", "smem": "0"},
                {"gpu": "a100", "threads": "1024", "registers": "32", "smem": "0"},
            ),
            _occupancy,
        ),
        Exercise(
            "latency",
            "latency",
            (
                {"gpu": "h100-sxm", "width": "4", "ilp": "1", "latency": "600", "threads": "256", "registers": "32"},
                {"gpu": "h100-sxm", "width": "16", "ilp": "1", "latency": "600", "threads": "256", "registers": "32"},
                {"gpu": "h100-sxm", "width": "16", "ilp": "4", "latency": "800", "threads": "256", "registers": "32"},
            ),
            _latency,
        ),
        Exercise(
            "feeding",
            "tensorcore",
            (
                {"dtype": "bf16", "n": "128"},
                {"dtype": "bf16"},
                {"dtype": "bf16", "n": "32"},
                {"dtype": "bf16", "n": "256"},
            ),
            _feeding,
        ),
        Exercise("registers", "registers", ({"head_dim": "256"}, {"head_dim": "64"}, {"head_dim": "128"}), _registers),
        # M = 64 on the H100 SXM: a 78% L2 hit rate is what the compute roof needs there
        Exercise("l2", "l2", ({"m": "128"}, {"m": "32", "gpu": "h200"}, {"m": "64", "gpu": "h100-sxm"}), _l2),
        Exercise(
            "pipeline",
            "pipeline",
            (
                {"n": "64", "hit": "0.9", "stages": "3", "tiles": "8"},
                {"n": "128", "hit": "0.3", "stages": "1", "tiles": "6"},
                {"n": "128", "hit": "0.9", "stages": "2", "tiles": "6"},
            ),
            _pipeline,
        ),
        Exercise(
            "decode",
            "decode",
            (
                {"n": "4096", "k": "4096", "dtype": "bf16", "gpu": "h200"},
                {"n": "24576", "k": "8192", "dtype": "bf16", "gpu": "h100-sxm"},  # ~311 FLOP/B at batch 64
                {"n": "24576", "k": "8192", "dtype": "fp8"},
            ),
            _decode,
        ),
        Exercise(
            "moe",
            "moe",
            (
                {"rows": "40,0,130,64", "block_m": "64", "n": "512", "block_n": "128"},
                {"rows": "7,7,7,7,7,7,7,7", "block_m": "64", "n": "256", "block_n": "128"},
                {"rows": "200,1,65", "block_m": "128", "n": "1024", "block_n": "256"},
            ),
            _moe,
        ),
    )
}

PARAMS = frozenset({"topic", "variant", "answer"})


def exercise(query: Mapping[str, str] | list[tuple[str, str]]) -> dict[str, Any]:
    """/api/exercise?topic=T[&variant=V][&answer=A]: the problem; with an answer, whether it is right and why."""
    p = Params(query, PARAMS)
    topic = p.choice("topic", "access", tuple(EXERCISES))
    ex = EXERCISES[topic]
    variant = p.int("variant", 0, 0, 1_000_000) % len(ex.variants)
    inputs = ex.variants[variant]
    out: dict[str, Any] = {
        "topic": topic,
        "panel": ex.panel,
        "variant": variant,
        "variants": len(ex.variants),
        "inputs": inputs,
    }
    out |= ex.pose(inputs)
    if not p.has("answer"):
        return {k: v for k, v in out.items() if k not in ("answer", "accept", "reasoning", "tolerance")}
    out["given"] = given = p.values["answer"].strip()[:40]
    if out["kind"] == "choice":
        ok = {o[0] for o in out["options"]}
        if given not in ok:
            raise InputError(f"answer must be one of {sorted(ok)}, got {given!r}")
        out["correct"] = given in out["accept"]
    else:
        try:
            x = float(given.rstrip("%").replace(",", ""))
        except ValueError:
            raise InputError(f"answer must be a number, got {given!r}") from None
        if not math.isfinite(x):
            raise InputError(f"answer must be a finite number, got {given!r}")
        out["correct"] = abs(x - out["answer"]) <= out["tolerance"]
    return out
