"""`tilewise explain decode`: decode attention is memory-bound; make HBM busy instead.

One new token per sequence: each query head brings one row, so the only M a cached K/V byte
can serve is the GQA group (query heads per K/V head). Decode attention
is memory-bound no matter what; the goal changes from Tensor-Core utilisation to saturating
HBM, e.g. by splitting the KV sequence so more SMs read it (split-KV). The decode GEMM
(batch x 8192 x 24576) gets its correction here too: at batch 64 a bf16 GEMM reaches only ~64 FLOP/B,
still memory-bound. tests/test_explain_decode.py asserts the numbers.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from tilewise import gpus as _gpus
from tilewise import validate
from tilewise.errors import cli_int, require
from tilewise.explain.predicted import prediction
from tilewise.explain.report import (
    Report,
    fmt_bytes,
    fmt_flops,
    fmt_intensity,
    fmt_time,
    pct,
)
from tilewise.model import decode, latency, mma, traffic

DEFAULTS = dict(
    batch=8, heads=32, kv_heads=8, seq_len=8192, head_dim=128, dtype="bf16", gpu=_gpus.DEFAULT_GPU, block_n=128
)


def explain(
    batch: int = 8,
    heads: int = 32,
    kv_heads: int = 8,
    seq_len: int = 8192,
    head_dim: int = 128,
    dtype: str = "bf16",
    gpu: str = _gpus.DEFAULT_GPU,
    block_n: int = 128,
    gemm_k: int = 8192,
    gemm_n: int = 24576,
) -> Report:
    """Report for one decode step of attention over a [batch, kv_heads, seq_len, head_dim] K/V cache."""
    batch, heads, kv_heads = (
        validate.size("batch", batch),
        validate.size("heads", heads),
        validate.size("kv_heads", kv_heads),
    )
    require(
        heads % kv_heads == 0, f"heads must be a multiple of kv_heads (GQA), got heads={heads}, kv_heads={kv_heads}"
    )
    seq_len, head_dim = validate.size("seq_len", seq_len), validate.size("head_dim", head_dim, maximum=512)
    block_n = validate.size("block_n", block_n, maximum=1024)
    gemm_k, gemm_n = validate.size("gemm_k", gemm_k), validate.size("gemm_n", gemm_n)
    g = _gpus.get(gpu)
    dt = _gpus.dtype_name(dtype)
    e = _gpus.element_bytes(dt)
    native = mma.path(g, dt)
    kv_b = batch * kv_heads * seq_len * head_dim * e
    validate.fits_memory(g, {"K cache": kv_b, "V cache": kv_b}, "the K/V cache")
    validate.fits_memory(g, {"weights": gemm_k * gemm_n * e}, "the decode GEMM's weights")
    da = decode.decode_attention(batch, heads, kv_heads, seq_len, head_dim, dt, g)
    p = _Decode(batch, heads, kv_heads, seq_len, head_dim, dt, e, g, native, block_n, gemm_k, gemm_n, da)
    r = Report.on_gpu(
        kind="decode",
        title=f"Decode attention [{batch} seqs x {seq_len} cached, {heads} heads ({kv_heads} KV), d={head_dim}] ({dt}) on {g.name}",
        gpu=g,
        inputs=dict(
            batch=batch,
            heads=heads,
            kv_heads=kv_heads,
            seq_len=seq_len,
            head_dim=head_dim,
            dtype=dt,
            block_n=block_n,
            gemm_k=gemm_k,
            gemm_n=gemm_n,
        ),
    )

    _work_and_bytes(r, p)
    _gqa(r, p)
    plan, one, merge = _split_kv(r, p)
    _time(r, p, plan, merge)
    _decode_gemm(r, p)
    _advice(r, p, plan, one)
    return r


@dataclass(frozen=True)
class _Decode:
    """The checked problem and what every step reads: sizes, dtype, GPU, its MMA path, the decode model."""

    batch: int
    heads: int
    kv_heads: int
    seq_len: int
    head_dim: int
    dt: str
    e: int
    g: _gpus.GPU
    native: mma.MmaPath
    block_n: int
    gemm_k: int
    gemm_n: int
    da: decode.DecodeAttention


def _work_and_bytes(r: Report, p: _Decode) -> None:
    batch, kv_heads, seq_len, head_dim, e, da = p.batch, p.kv_heads, p.seq_len, p.head_dim, p.e, p.da
    # 1. Work and bytes.
    s = r.step("problem", "The work and the bytes", flops=da.flops, bytes=da.bytes, kv_bytes=da.kv_bytes)
    s.say(
        f"Each sequence adds one query per head: 4 x {head_dim} FLOPs per (query head, cached key) = "
        f"{fmt_flops(da.flops)}. The K/V cache, 2 x {batch} x {kv_heads} x {seq_len} x {head_dim} x {e} B = "
        f"{fmt_bytes(da.kv_bytes)}, is read once ({fmt_bytes(da.bytes)} with q and o)."
    )


def _gqa(r: Report, p: _Decode) -> None:
    heads, kv_heads, native, da = p.heads, p.kv_heads, p.native, p.da
    # 2. GQA: the group is the M.
    s = r.step(
        "gqa",
        "GQA: the group size is the M",
        group=da.group,
        intensity=da.intensity,
        balance=da.balance,
        fill_mma=da.fill_mma,
        fill_wgmma=da.fill_wgmma,
        native_instruction=native.instruction,
        fill_native=decode.fragment_fill(da.group, native.m),
    )
    s.say(
        f"{heads} query heads over {kv_heads} K/V heads: groups of {da.group}. Packing a group's queries into one "
        f"tile makes each K/V byte serve {da.group} rows: M = {da.group}, {da.intensity:.2f} FLOP/B against a balance "
        f"of {da.balance:.0f}. A 16-row mma.sync fragment is {pct(da.fill_mma)} full"
        + (
            "."
            if native.m == 16
            else f", this GPU's {native.name} with {native.m} rows {pct(decode.fragment_fill(da.group, native.m))}."
        )
    )
    if da.bound == "memory":
        s.say("Memory-bound no matter what: the target is HBM bandwidth, not Tensor-Core utilisation.")
    else:
        s.say(
            f"A group of {da.group} query heads per K/V head reaches the balance: this step is compute-bound, "
            "outside the usual decode case the rest of this report is written for."
        )


def _split_kv(r: Report, p: _Decode) -> tuple[decode.SplitPlan, decode.SplitCandidate, int]:
    batch, heads, kv_heads, seq_len, head_dim, g, block_n = (
        p.batch,
        p.heads,
        p.kv_heads,
        p.seq_len,
        p.head_dim,
        p.g,
        p.block_n,
    )
    # 3. Split-KV by wave efficiency.
    plan = decode.split_plan(batch, kv_heads, seq_len, g.sms, block_n)
    one = plan.candidates[0]
    chosen = plan.candidates[plan.splits - 1]
    merge = traffic.split_kv_merge_bytes(plan.splits, batch, heads, head_dim)
    shown = sorted({1, 2, 4, 8, 16, 32, 64, plan.splits} & set(range(1, plan.max_splits + 1)))
    s = r.step(
        "split_kv",
        "Split-KV, chosen by wave efficiency",
        work_items_unsplit=one.work_items,
        efficiency_unsplit=one.efficiency,
        splits=plan.splits,
        work_items=chosen.work_items,
        blocks_per_split=chosen.blocks_per_split,
        rounds=chosen.rounds,
        efficiency=plan.efficiency,
        kv_blocks=plan.kv_blocks,
        merge_bytes=merge,
        rule=plan.rule,
        candidates=[c.to_dict() for c in plan.candidates if c.splits in shown],
    )
    s.say(
        f"Without splitting there are {batch} x {kv_heads} = {one.work_items} work items for {g.sms} SMs: "
        f"{pct(one.efficiency)} of the SM-time streams K/V."
    )
    s.say(
        f"Rule: {plan.rule}. Chosen: {plan.splits} split(s) -> {chosen.work_items} items of "
        f"<= {chosen.blocks_per_split} blocks x {block_n} keys, {chosen.rounds} round(s), {pct(plan.efficiency)}."
    )
    s.say(
        "  splits: "
        + ", ".join(f"{c.splits} -> {pct(c.efficiency)}" for c in plan.candidates if c.splits in shown)
        + (f". Merging the partial outputs moves {fmt_bytes(merge)}." if merge else ".")
    )
    return plan, one, merge


def _time(r: Report, p: _Decode, plan: decode.SplitPlan, merge: int) -> None:
    batch, heads, kv_heads, seq_len, head_dim, dt, g, da = (
        p.batch, p.heads, p.kv_heads, p.seq_len, p.head_dim, p.dt, p.g, p.da
    )  # fmt: skip
    # 4. Time.
    t_mem = (da.bytes + merge) / g.hbm_bytes_per_s / plan.efficiency
    t_compute = da.flops / _gpus.peak_flops(g, dt) / plan.efficiency
    t = max(t_mem, t_compute)  # a huge GQA group can make the step compute-bound (said in step 2)
    lh = latency.warps_to_hide_memory(gpu=g)
    s = r.step(
        "time",
        "Bandwidth-bound time" if t_mem >= t_compute else "Time (compute-bound here)",
        bandwidth_time_s=da.bandwidth_time_s,
        time_s=t,
        effective_tb_s=da.bytes / t / 1e12,
        tensor_utilisation=da.flops / _gpus.peak_flops(g, dt) / t,
        bytes_in_flight_per_sm=lh.in_flight_needed,
        warps_needed_16b_loads=lh.warps_needed,
    )
    s.say(
        f"{fmt_bytes(da.bytes)} / {g.hbm_bytes_per_s / 1e12:.2f} TB/s = {fmt_time(da.bandwidth_time_s)} at full "
        f"bandwidth; with the merge and {pct(plan.efficiency)} of SM-time streaming: ~{fmt_time(t)} "
        f"({da.bytes / t / 1e12:.2f} TB/s). The Tensor Cores are busy {pct(da.flops / _gpus.peak_flops(g, dt) / t)}"
        + (
            "."
            if t_mem >= t_compute
            else f"; the compute ({fmt_time(t_compute)}) is longer than the streaming ({fmt_time(t_mem)})."
        )
    )
    prediction(
        s, "decode",
        {"batch": batch, "heads": heads, "kv_heads": kv_heads, "seq_len": seq_len, "head_dim": head_dim, "dtype": dt},
        g.key, what="tilewise's decode kernel at its default (the advisor's key tile and split count)",
        floor_s=da.bandwidth_time_s,
    )  # fmt: skip
    s.say(
        f"To stream at that rate each SM needs ~{lh.in_flight_needed / 1024:.1f} KB in flight (Little's law, "
        f"~{lh.latency_cycles:.0f} cycles of latency, a model figure): {lh.warps_needed} warps of 16-byte loads, "
        "or a few K/V blocks prefetched asynchronously."
    )


def _decode_gemm(r: Report, p: _Decode) -> None:
    gemm_k, gemm_n, dt, g = p.gemm_k, p.gemm_n, p.dt, p.g
    # 5. The decode GEMM's roofline vs batch (batch 64 is still memory-bound).
    pts = decode.decode_gemm_roofline(gemm_k, gemm_n, (1, 16, 64, 128, 256, 512), dt, g)
    need = decode.batch_for_compute_bound(gemm_k, gemm_n, dt, g)
    p64 = next(p for p in pts if p.batch == 64)
    s = r.step(
        "gemm",
        "The decode GEMM: batch vs roofline",
        k=gemm_k,
        n=gemm_n,
        points=[p.to_dict() for p in pts],
        intensity_at_64=p64.intensity,
        bound_at_64=p64.bound,
        batch_for_compute_bound=need,
    )
    s.say(
        f"[batch, {gemm_k}] x [{gemm_k}, {gemm_n}]: intensity ~ batch. Batch 1 is {pts[0].intensity:.2f} FLOP/B "
        f"(fragment {pct(pts[0].fill_mma)} full); batch 64 fills the fragments ({pct(p64.fill_mma)}) but reaches only "
        f"{p64.intensity:.1f} FLOP/B against {p64.balance:.0f}: still {p64.bound}-bound, Tensor Cores at most "
        f"{pct(p64.tensor_utilisation)} busy. "
        + (f"Compute-bound from batch {need}." if need is not None else "No batch up to 2^24 reaches the balance.")
    )
    s.say(
        "  "
        + ", ".join(f"batch {p.batch}: {fmt_intensity(p.intensity)} FLOP/B, {pct(p.tensor_utilisation)}" for p in pts)
    )


def _advice(r: Report, p: _Decode, plan: decode.SplitPlan, one: decode.SplitCandidate) -> None:
    da = p.da
    if plan.splits > 1:
        r.advice.append(
            f"Split the K/V sequence {plan.splits} ways: {pct(one.efficiency)} -> {pct(plan.efficiency)} of SM-time "
            "streaming K/V."
        )
    if da.group > 1:
        r.advice.append(f"Pack each GQA group's {da.group} query heads into one tile so K/V is read once per group.")
    r.advice.append(
        "Use 16-byte loads and several K/V blocks in flight per SM: bytes in flight, not warps, set the pace."
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", type=cli_int, default=8, help="sequences (default 8)")
    p.add_argument("--heads", type=cli_int, default=32, help="query heads (default 32)")
    p.add_argument("--kv-heads", type=cli_int, default=8, help="K/V heads (default 8)")
    p.add_argument("--seq-len", type=cli_int, default=8192, help="cached tokens per sequence (default 8192)")
    p.add_argument("--head-dim", type=cli_int, default=128, help="head dimension (default 128)")
    p.add_argument("--dtype", default="bf16", help="K/V cache dtype (default bf16)")
    p.add_argument("--gpu", default=_gpus.DEFAULT_GPU, help=f"registry name (default {_gpus.DEFAULT_GPU})")
    p.add_argument(
        "--block-n",
        type=cli_int,
        default=DEFAULTS["block_n"],
        help="keys per K/V block (default 128, the decode kernel's key tile)",
    )


def from_args(a: argparse.Namespace) -> Report:
    return explain(
        batch=a.batch,
        heads=a.heads,
        kv_heads=a.kv_heads,
        seq_len=a.seq_len,
        head_dim=a.head_dim,
        dtype=a.dtype,
        gpu=a.gpu,
        block_n=a.block_n,
    )


__all__ = ["DEFAULTS", "add_arguments", "explain", "from_args"]
