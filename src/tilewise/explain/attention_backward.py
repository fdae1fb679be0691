"""`tilewise explain attention --backward`: the FlashAttention backward's tiles, step by step.

One function per step, in the order the forward's walk uses: the work (which GEMMs, how many FLOPs), the tile
(which operand stays in shared memory, which streams, what accumulates in registers), the register budget, the
shared memory, the bytes (HBM, the L2 re-reads and the atomic dQ traffic), the memory the backward allocates
(linear in S, against the S x S buffer a naive backward keeps) and the predicted time.
Every figure comes from `tilewise.model.attention_backward`.
"""

from __future__ import annotations

import argparse
from typing import Any

from tilewise import gpus as _gpus
from tilewise import validate
from tilewise.errors import InputError, cli_int, require
from tilewise.explain import attention_problem
from tilewise.explain.report import Report, fmt_bytes, fmt_flops, fmt_kib, fmt_time
from tilewise.model import attention_backward as model
from tilewise.model import traffic
from tilewise.util import cdiv


def _work(r: Report, p: dict[str, Any], dq: str) -> None:
    fwd = traffic.attention_flops(p["batch"], p["heads"], p["seq_q"], p["seq_k"], p["head_dim"], p["causal"])
    n = model.GEMMS[dq]
    run = model.flops(p["batch"], p["heads"], p["seq_q"], p["seq_k"], p["head_dim"], p["causal"], dq)
    s = r.step("work", f"The work: {n} GEMMs per tile where the forward has two", forward_flops=fwd,
               gemms_per_pair=n, flops=run, ratio_to_forward=run / fwd if fwd else None)  # fmt: skip
    s.say(
        "P is rebuilt from the forward's log-sum-exp instead of being stored: S^T = K Q^T is recomputed, then "
        "dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - D) with D = rowsum(dO o O) (one fp32 per query row, a "
        "preprocessing pass), dK += scale dS^T Q and dQ += scale dS K."
    )
    s.say(
        f"{n} GEMMs of 2 d FLOPs per (query, key) pair: {fmt_flops(run)} against the forward's {fmt_flops(fwd)} "
        f"({run / fwd:.1f}x)"
        + (
            "; dQ is added atomically (fp32) from the dK/dV program."
            if dq == "atomic"
            else "; dQ comes from a second kernel that recomputes S and dP (two GEMMs more), with no atomics."
        )
    )


def _tile(r: Report, p: dict[str, Any], c: dict[str, Any]) -> None:
    d, bm, bn, e = p["head_dim"], c["block_m"], c["block_n"], _gpus.element_bytes(p["dtype"])
    group = p["heads"] // p["kv_heads"]
    programs = cdiv(p["seq_k"], bn) * p["batch"] * p["kv_heads"]
    s = r.step("tile", "The tile: K and V stay, Q and dO stream", programs=programs, block_m=bm, block_n=bn,
               kv_resident_bytes=2 * bn * d * e, q_do_step_bytes=2 * bm * d * e, group=group)  # fmt: skip
    s.say(
        f"One program per key block of {bn} keys of one K/V head ({programs} programs): K and V "
        f"({fmt_kib(2 * bn * d * e)} together) are loaded once and stay in shared memory as the B operands of "
        f"S^T = K Q^T and dP^T = V dO^T; the query blocks of {bm} rows stream past, Q and dO "
        f"({fmt_kib(2 * bm * d * e)} a step) through a ring of {c['num_stages']} stage(s)."
    )
    s.say(
        f"dK and dV ({bn} x {d} fp32 each) accumulate in registers for the whole loop and are written once. "
        + (
            f"GQA: the program walks the query blocks of all {group} query heads of its K/V head, so dK and dV are "
            "summed over the group inside one program, with no atomics across heads."
            if group > 1
            else "Each K/V head has one query head."
        )
    )
    if c["dq"] == "separate":
        s.say(
            f"dQ comes from a second kernel with the roles swapped: one program per block of {c['dq_block_m']} query "
            f"rows keeps Q, dO and the fp32 dQ accumulator on chip and streams the key blocks of {c['dq_block_n']} "
            f"({c['dq_warps']} warps, {c['dq_stages']} stage(s)), recomputing S and dP: no atomics, bitwise "
            "repeatable."
        )
    if p["causal"]:
        s.say(
            "Causal: query blocks that see no key of the block are never visited; only the blocks the diagonal "
            "crosses carry the mask (bottom-right aligned)."
        )


def _tile_budget(p: dict[str, Any], c: dict[str, Any]) -> dict[str, Any]:
    """The registers and shared memory of one dK/dV program (`model.attention_backward.tile_budget`)."""
    return model.tile_budget(p["head_dim"], c["block_m"], c["block_n"], c["num_warps"], c["num_stages"], p["dtype"])


def _registers(r: Report, p: dict[str, Any], c: dict[str, Any]) -> None:
    b = _tile_budget(p, c)
    g = b["registers"]
    s = r.step("registers", "The register budget", **g)
    s.say(
        f"With {c['num_warps']} warps ({32 * c['num_warps']} threads): dK + dV {g['dk_dv']:.0f}, S^T + dP^T "
        f"{g['s_dp']:.0f}, P^T and dS^T rounded to {p['dtype']} as the register A operands of the dV and dK GEMMs "
        f"{g['p_ds']:.0f}, addresses and row statistics ~16: {g['total']:.0f} of {g['limit']} per thread"
        + (" - fits." if g["fits"] else " - over the limit: the compiler spills, take a smaller block_n or d.")
    )


def _smem(r: Report, p: dict[str, Any], c: dict[str, Any]) -> None:
    b = _tile_budget(p, c)
    m = b["smem"]
    s = r.step("smem", "Shared memory", **m)
    s.say(
        f"K and V {fmt_kib(m['kv_bytes'])} + {m['stages']} x (Q, dO) {fmt_kib(m['q_do_stage_bytes'])} = "
        f"{fmt_kib(m['total_bytes'])} of {fmt_kib(m['limit_bytes'])} per block"
        + (" - fits." if m["fits"] else " - does not fit.")
    )


def _bytes(r: Report, p: dict[str, Any], c: dict[str, Any], dq: str) -> None:
    B, H, Hk, sq, sk, d = p["batch"], p["heads"], p["kv_heads"], p["seq_q"], p["seq_k"], p["head_dim"]
    hbm = model.hbm_bytes(B, H, Hk, sq, sk, d, p["dtype"], dq)
    atomics = model.atomic_bytes(B, H, sq, sk, d, c["block_n"], p["causal"]) if dq == "atomic" else 0
    s = r.step("bytes", "Bytes: HBM once, L2 many times", hbm_bytes=hbm, atomic_bytes=atomics)
    s.say(
        f"Compulsory HBM traffic {fmt_bytes(hbm)}: Q, K, V, O, dO, lse and D in; dQ, dK, dV out"
        + (" (and the fp32 dQ accumulator)." if dq == "atomic" else ".")
    )
    if atomics:
        s.say(
            f"Each key block adds a [{c['block_m']}, {d}] fp32 partial of dQ per query block it meets: "
            f"{fmt_bytes(atomics)} of atomic adds, resolved in L2 (they never reach HBM until the cast)."
        )


def _memory(r: Report, p: dict[str, Any], dq: str) -> None:
    B, H, Hk, sq, sk, d = p["batch"], p["heads"], p["kv_heads"], p["seq_q"], p["seq_k"], p["head_dim"]
    e = _gpus.element_bytes(p["dtype"])
    ours = (B * H * sq * d + 2 * B * Hk * sk * d) * e + B * H * sq * 4 + (B * H * sq * d * 4 if dq == "atomic" else 0)
    naive = B * H * sq * sk * 4
    s = r.step("memory", "Memory the backward allocates: linear in S", bytes=ours, naive_score_bytes=naive)
    s.say(
        f"dQ, dK, dV, D{' and the fp32 dQ accumulator' if dq == 'atomic' else ''}: {fmt_bytes(ours)}. One fp32 "
        f"[B, H, Sq, Sk] buffer of P, which a backward that rebuilds P in full keeps, is {fmt_bytes(naive)}."
    )


def _time(r: Report, p: dict[str, Any], c: dict[str, Any], gpu: str) -> None:
    pred = model.predict(p, c, gpu)
    s = r.step("predicted", "Predicted time", ms=pred.ms, binding=pred.binding, terms=pred.terms)
    terms = ", ".join(f"{k} {fmt_time(v * 1e-3)}" for k, v in pred.terms.items())
    s.say(f"{fmt_time(pred.ms * 1e-3)}, bound by {pred.binding} ({terms}).")


def explain(
    batch: int = 4,
    heads: int = 16,
    kv_heads: int | None = None,
    seq_q: int = 8192,
    seq_k: int | None = None,
    head_dim: int = 128,
    causal: bool = False,
    block_m: int | None = None,
    block_n: int | None = None,
    num_warps: int | None = None,
    stages: int | None = None,
    deterministic: bool = False,
    dtype: str = "bf16",
    gpu: str = _gpus.DEFAULT_GPU,
    dq: str | None = None,
) -> Report:
    """Report for the backward of attention of Q [batch, heads, seq_q, d] against K, V [batch, kv_heads, seq_k, d].

    The dK/dV tile and the dQ mode default to what `tilewise.kernels.attention_backward` launches
    (`tilewise.model.attention_backward.shipped_config`); given ones replace the dK/dV program's."""
    batch, heads, kv_heads, seq_q, seq_k, d = attention_problem.checked_sizes(
        batch, heads, kv_heads, seq_q, seq_k, head_dim
    )
    require(dq in (None, *model.GEMMS), f"dq must be one of {', '.join(model.GEMMS)}, got {dq!r}")
    require(d in model.SHIPPED, f"head_dim must be one of {', '.join(map(str, model.SHIPPED))}, got {d}")
    ship = model.shipped_config(d, deterministic, dq)
    bm = validate.size("block_m", ship["block_m"] if block_m is None else block_m, minimum=16, maximum=256)
    bn = validate.size("block_n", ship["block_n"] if block_n is None else block_n, minimum=16, maximum=256)
    w = validate.size("num_warps", ship["num_warps"] if num_warps is None else num_warps, maximum=16)
    stages = validate.size("stages", ship["num_stages"] if stages is None else stages, maximum=8)
    g = _gpus.get(gpu)
    dt = attention_problem.walk_dtype(dtype)
    mode = ship["dq"]
    p = attention_problem.problem(batch, heads, kv_heads, seq_q, seq_k, d, causal, dt)
    c = {"block_m": bm, "block_n": bn, "num_warps": w, "num_stages": stages, "dq": mode,
         **{k: ship[k] for k in ("dq_block_m", "dq_block_n", "dq_warps", "dq_stages")}}  # fmt: skip
    r = Report.on_gpu(
        kind="attention_backward",
        title=attention_problem.title("backward", p, g),
        gpu=g,
        inputs={**p, **c},
    )
    _work(r, p, mode)
    _tile(r, p, c)
    _registers(r, p, c)
    _smem(r, p, c)
    _bytes(r, p, c, mode)
    _memory(r, p, mode)
    _time(r, p, c, g.key)
    return r


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The backward's own options (the problem's options are the forward's)."""
    p.add_argument("--backward", action="store_true", help="walk the backward (dQ, dK, dV) instead")
    p.add_argument("--deterministic", action="store_true", help="--backward: dQ by a second kernel, no atomics")
    p.add_argument("--dq", choices=["atomic", "separate"], default=None,
                   help="--backward: the dQ mode (default: the kernel's, tilewise.model.attention_backward.DQ_MODE)")  # fmt: skip
    p.add_argument("--warps", type=cli_int, default=None, dest="num_warps", help="--backward: warps per program (8)")


def refuse_without_backward(a: argparse.Namespace) -> None:
    """The forward's walk takes none of the backward's own options: one given without --backward is an error."""
    for opt, given in (
        ("--deterministic", a.deterministic),
        ("--warps", a.num_warps is not None),
        ("--dq", a.dq is not None),
    ):
        if given:
            raise InputError(f"{opt} applies only with --backward (explain attention --backward {opt} ...)")


def from_args(a: argparse.Namespace) -> Report:
    if a.hit_rate is not None:
        raise InputError("--hit-rate is the forward's K/V reuse; explain attention --backward does not take it")
    return explain(
        batch=a.batch, heads=a.heads, kv_heads=a.kv_heads, seq_q=a.seq_q, seq_k=a.seq_k, head_dim=a.head_dim,
        causal=a.causal, block_m=a.block_m, block_n=a.block_n, num_warps=a.num_warps, stages=a.stages,
        deterministic=a.deterministic, dtype=a.dtype, gpu=a.gpu, dq=a.dq,
    )  # fmt: skip


__all__ = ["add_arguments", "explain", "from_args", "refuse_without_backward"]
