"""`tilewise explain attention`: why FlashAttention-3 picks its tile sizes on Hopper.

The default is FA3's forward on Hopper: head dim 128,
64 rows of Q per consumer warpgroup (two consumers, 128 rows per block), K/V tiles of
N = 128, bf16, on an H100 SXM. The walk: the block's warpgroups; one
wgmma and the SM's 4096 FLOPs/cycle (989.4 TFLOPS = 4096 x 132 x 1.83 GHz); feeding it from
shared memory (16 cycles for A, N >= 64, ratios 1.00 / 1.33 / 1.60, limit 2); the register
budget (192 of 255 at N = 256); shared memory and the pipeline depth; HBM (intensity = M,
balance 295, ~78% L2 hits at M = 64; GQA multiplies M by the group size); the three pipeline
designs; waves. Every number comes from `tilewise.model`; tests/test_explain_attention.py
asserts them (docs/sources.md lists the figures).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any, cast

from tilewise import gpus as _gpus
from tilewise import validate
from tilewise.errors import InputError, cli_int, flag, fraction, require
from tilewise.explain import attention_backward, attention_problem
from tilewise.explain.predicted import prediction
from tilewise.explain.report import (
    Report,
    Step,
    fmt_bytes,
    fmt_flops,
    fmt_intensity,
    fmt_kib,
    fmt_time,
    pct,
)
from tilewise.model import latency, mma, pipeline, roofline, tensorcore, traffic, waves
from tilewise.model.occupancy import Occupancy, occupancy
from tilewise.util import cdiv

DEFAULTS = dict(
    batch=4,
    heads=16,
    kv_heads=None,
    seq_q=8192,
    seq_k=None,
    head_dim=128,
    causal=False,
    block_m=64,
    consumers=2,
    block_n=128,
    stages=2,
    dtype="bf16",
    gpu=_gpus.DEFAULT_GPU,
    hit_rate=None,
)


def explain(
    batch: int = 4,
    heads: int = 16,
    kv_heads: int | None = None,
    seq_q: int = 8192,
    seq_k: int | None = None,
    head_dim: int = 128,
    causal: bool = False,
    block_m: int = 64,
    consumers: int = 2,
    block_n: int = 128,
    stages: int = 2,
    dtype: str = "bf16",
    gpu: str = _gpus.DEFAULT_GPU,
    hit_rate: float | None = None,
) -> Report:
    """Report for an attention forward of Q [batch, heads, seq_q, d] against K, V [batch, kv_heads, seq_k, d]."""
    batch, heads, kv_heads, seq_q, seq_k, d = attention_problem.checked_sizes(
        batch, heads, kv_heads, seq_q, seq_k, head_dim
    )
    bm = validate.size("block_m", block_m, maximum=256)
    consumers = validate.size("consumers", consumers, maximum=3)
    bn = validate.size("block_n", block_n, minimum=16, maximum=tensorcore.WGMMA_N_MAX)
    # N is the N of S = Q.K^T and the K of O = P.V, walked 16 at a time.
    validate.multiple("block_n", bn, 16, "the K of O = P.V, walked 16 at a time; wgmma's N steps by 8")
    stages = validate.size("stages", stages, maximum=16)
    causal = flag("causal", causal)
    g = _gpus.get(gpu)
    dt = attention_problem.walk_dtype(dtype)
    native = mma.path(g, dt)
    arch = native.family  # ampere (mma.sync: Ampere and Ada), hopper or blackwell
    why_m = {
        "hopper": "wgmma's M = 64",
        "ampere": "4 warps x mma.sync's M = 16",
        "blackwell": "tcgen05's M = 64 or 128",
    }[arch]
    require(bm % 64 == 0, f"block_m must be a multiple of {why_m}, got {bm}")
    if hit_rate is not None:
        hit_rate = fraction("hit_rate", hit_rate)
    e = _gpus.element_bytes(dt)
    q_b, kv_b = batch * heads * seq_q * d * e, batch * kv_heads * seq_k * d * e
    validate.fits_memory(g, {"Q": q_b, "K": kv_b, "V": kv_b, "O": q_b}, "Q, K, V and O")
    p = _Attention(
        batch, heads, kv_heads, seq_q, seq_k, d, causal, bm, consumers, bn, stages, dt, e, g, native, hit_rate
    )
    r = _report(p)

    flops, rf = _problem(r, p)
    b = _block(r, p)
    mm = _mma(r, p)
    feed = _feed(r, p, mm)
    tm: mma.TmemBudget | None = None
    rb: tensorcore.RegisterBudget | None = None
    if arch == "blackwell":  # N's upper bound: Tensor Memory holds S and O on Blackwell, the registers elsewhere
        tm = _tmem(r, p)
    else:
        rb = _registers(r, p, b)
    _smem(r, p, b)
    h, reuse = _hbm(r, p)
    tt, cmp = _pipeline(r, p, mm, h)
    gw = _waves(r, p, b, flops, rf, cmp)
    _advice_tile(r, p, b, mm, feed, rb, tm)
    _advice_schedule(r, tt, cmp, h, reuse, gw)
    return r


@dataclass(frozen=True)
class _Attention:
    """The checked problem every step reads: sizes, the block's shape, dtype, GPU and its MMA path."""

    batch: int
    heads: int
    kv_heads: int
    seq_q: int
    seq_k: int
    d: int
    causal: bool
    bm: int
    consumers: int
    bn: int
    stages: int
    dt: str
    e: int
    g: _gpus.GPU
    native: mma.MmaPath
    hit_rate: float | None

    @property
    def arch(self) -> str:
        """ampere (mma.sync: Ampere and Ada), hopper or blackwell."""
        return self.native.family

    @property
    def problem(self) -> dict[str, Any]:
        """The problem as the time model reads it."""
        return attention_problem.problem(
            self.batch, self.heads, self.kv_heads, self.seq_q, self.seq_k, self.d, self.causal, self.dt
        )

    @property
    def group(self) -> int:
        """Query heads per K/V head (GQA)."""
        return self.heads // self.kv_heads

    @property
    def cta_rows(self) -> int:
        """Rows of Q per block: every consumer's."""
        return self.bm * self.consumers

    @property
    def q_blocks(self) -> int:
        """Blocks along one head's queries."""
        return cdiv(self.seq_q, self.cta_rows)


@dataclass(frozen=True)
class _Block:
    """What a block holds: its threads, the registers each gets, its shared memory, and how many fit per SM."""

    threads: int
    regs: dict[str, Any]  # setmaxnreg's producer/consumer split (Hopper), else empty
    tb: dict[str, Any]  # tensorcore.attention_tile_budget: the tile's shared memory and registers
    launch_regs: int
    occ: Occupancy

    @property
    def budget(self) -> int:
        """Registers per computing thread: the consumers' after setmaxnreg on Hopper, the launch's elsewhere."""
        return int(self.regs["consumer_regs"]) if self.regs else self.launch_regs


@dataclass(frozen=True)
class _Mma:
    """One MMA instruction of S = Q.K^T and the SM's rate."""

    sm: dict[str, Any]  # tensorcore.sm_flops_per_cycle
    shape: list[int]  # [M, N, K] of one instruction
    slices: int  # instructions along d
    inst_flops: int
    inst_cycles: float

    @property
    def per_sm(self) -> int:
        """Dense Tensor-Core FLOPs per cycle per SM."""
        return int(self.sm["flops_per_cycle_per_sm"])

    @property
    def k(self) -> int:
        """The K one instruction takes (16 for 16-bit types)."""
        return self.shape[2]


def _report(p: _Attention) -> Report:
    batch, heads, kv_heads, seq_q, seq_k, d, causal, bm, consumers, bn, stages, dt, g, native, arch = (
        p.batch, p.heads, p.kv_heads, p.seq_q, p.seq_k, p.d, p.causal, p.bm, p.consumers, p.bn, p.stages, p.dt,
        p.g, p.native, p.arch,
    )  # fmt: skip
    r = Report.on_gpu(
        kind="attention",
        title=attention_problem.title("forward", p.problem, g),
        gpu=g,
        inputs=dict(
            batch=batch,
            heads=heads,
            kv_heads=kv_heads,
            seq_q=seq_q,
            seq_k=seq_k,
            head_dim=d,
            causal=causal,
            block_m=bm,
            consumers=consumers,
            block_n=bn,
            stages=stages,
            dtype=dt,
            hit_rate=p.hit_rate,
        ),
    )
    if arch != "hopper":
        r.notes.append(
            {
                "ampere": f"The {g.name} is {'Ada' if g.arch == 'ada' else 'Ampere'}: {native.instruction} from one warp, operands in registers "
                "(ldmatrix from shared memory), cp.async copies, no TMA, no wgmma, no setmaxnreg. The walk below "
                "uses those rules; the Hopper-only steps (warpgroup MMAs, producer warpgroup) are replaced.",
                "blackwell": f"The {g.name} is Blackwell: {native.instruction} is issued by one thread and "
                "accumulates in Tensor Memory (128 lanes x 512 columns of 32 bits per SM), so S and O leave the "
                "register file; the walk below uses those rules in place of Hopper's wgmma rules.",
            }[arch]
        )
    if bm * consumers > seq_q:
        r.notes.append(
            f"A block's {bm * consumers} rows of Q are more than seq_q = {seq_q}: one block per head, "
            f"{pct(seq_q / (bm * consumers))} of its rows real; the per-tile figures are for the full tile."
        )
    if bn > seq_k:
        r.notes.append(f"block_n = {bn} is more than seq_k = {seq_k}: one K/V tile, {pct(seq_k / bn)} of it real.")
    return r


def _problem(r: Report, p: _Attention) -> tuple[int, roofline.Roofline]:
    # 1. The problem.
    flops = traffic.attention_flops(p.batch, p.heads, p.seq_q, p.seq_k, p.d, p.causal)
    nbytes = traffic.attention_bytes(p.batch, p.heads, p.kv_heads, p.seq_q, p.seq_k, p.d, p.dt)
    rf_ideal = roofline.time(p.g, flops, nbytes, p.dt)
    s = r.step(
        "problem",
        "The work and the bytes",
        flops=flops,
        bytes=nbytes,
        intensity_ideal=rf_ideal.intensity,
        balance=rf_ideal.balance,
        compute_s=rf_ideal.compute_s,
    )
    s.say(
        f"S = Q.K^T and O = P.V: 4 x d FLOPs per (query, key) pair{' left unmasked' if p.causal else ''} = "
        f"{fmt_flops(flops)}. Reading Q, K, V once and writing O once is {fmt_bytes(nbytes)}: "
        f"{fmt_intensity(rf_ideal.intensity)} FLOP/B if every byte were read once. The question is what one block sees."
    )
    return flops, rf_ideal


def _block_resources(p: _Attention) -> _Block:
    """Threads per block by MMA family, setmaxnreg's split, the tile's budget and the registers a block launches with."""
    consumers, g, arch = p.consumers, p.g, p.arch
    wt = tensorcore.WARPGROUP_THREADS
    if arch == "hopper":
        threads = (1 + consumers) * wt
    elif arch == "ampere":
        threads = consumers * wt  # every warp computes and copies; no producer
    else:
        threads = consumers * wt + 2 * g.warp_size  # softmax warpgroups + one TMA warp + one MMA warp
    regs: dict[str, Any] = tensorcore.setmaxnreg_split(1, consumers, 24, g) if arch == "hopper" else {}
    tb = tensorcore.attention_tile_budget(p.d, p.bn, p.bm, p.dt, p.stages, g, consumers)
    # The most registers per thread (a multiple of 8) with which one block still fits: the per-warp
    # allocation over 4 sub-partitions can refuse what a plain 65,536 / threads would allow.
    smem_used = min(tb["smem"]["total_bytes"], g.smem_per_block_optin)
    launch_regs = min(g.max_regs_per_thread, (g.regs_per_sm // threads) // 8 * 8)
    occ = occupancy(g, threads, launch_regs, 0, smem_used)
    while occ.blocks_per_sm == 0 and launch_regs > 8:
        launch_regs -= 8
        occ = occupancy(g, threads, launch_regs, 0, smem_used)
    return _Block(threads, regs, tb, launch_regs, occ)


def _block(r: Report, p: _Attention) -> _Block:
    consumers, bm, cta_rows, stages, native, arch, g = p.consumers, p.bm, p.cta_rows, p.stages, p.native, p.arch, p.g
    # 2. The block: who computes, who copies, and the registers.
    b = _block_resources(p)
    threads, regs, tb, launch_regs, occ = b.threads, b.regs, b.tb, b.launch_regs, b.occ
    lh = latency.warps_to_hide_memory(gpu=g)
    ring = latency.async_in_flight(stages, tb["smem"]["kv_stage_bytes"], gpu=g)
    s = r.step(
        "block",
        {
            "hopper": "One block per SM: a producer and consumer warpgroups",
            "ampere": "One block: warps that copy and compute alike",
            "blackwell": "One block: one thread issues the MMAs, warpgroups run softmax",
        }[arch],
        arch=arch,
        instruction=native.to_dict(),
        warpgroups=(1 + consumers) if arch == "hopper" else consumers,
        consumers=consumers,
        threads=threads,
        warps=threads // 32,
        rows_per_consumer=bm,
        rows_per_block=cta_rows,
        launch_registers=launch_regs,
        producer_registers=regs["producer_regs"] if regs else None,
        consumer_registers=regs["consumer_regs"] if regs else launch_regs,
        blocks_per_sm=occ.blocks_per_sm,
        occupancy=occ.occupancy,
        latency_cycles=lh.latency_cycles,
        bytes_in_flight_needed=lh.in_flight_needed,
        warps_needed_16b_loads=lh.warps_needed,
        ring_bytes_in_flight=ring["bytes_in_flight"],
    )
    feeder = _block_prose(s, p, b)
    s.say(
        f"Little's law: this SM's HBM share ({lh.throughput_per_cycle:.1f} B/cycle) through ~{lh.latency_cycles:.0f} "
        f"cycles of latency (a model figure) needs {fmt_kib(lh.in_flight_needed)} in flight: {lh.warps_needed} warps "
        f"of 16-byte loads, or the ring's {stages - 1} stage(s) ahead = {fmt_kib(ring['bytes_in_flight'])} from the "
        f"{feeder}."
    )
    return b


def _block_prose(s: Step, p: _Attention, b: _Block) -> str:
    """Who computes and who copies, and the registers each gets; returns who feeds the K/V ring."""
    consumers, bm, cta_rows, arch, g = p.consumers, p.bm, p.cta_rows, p.arch, p.g
    threads, regs, tb, launch_regs, occ = b.threads, b.regs, b.tb, b.launch_regs, b.occ
    if tb["smem"]["total_bytes"] > g.smem_per_block_optin:  # occupancy of a block that cannot launch: say so
        fit = (
            f"With {fmt_kib(tb['smem']['total_bytes'])} of shared memory the block does not launch (at most "
            f"{fmt_kib(g.smem_per_block_optin)} per block, step 6)"
        )
    else:
        fit = (
            f"With {fmt_kib(tb['smem']['total_bytes'])} of shared memory, {occ.blocks_per_sm} block(s) fit per SM "
            f"({pct(occ.occupancy)} occupancy)"
        )
    if arch == "hopper":
        s.say(
            f"A warpgroup is 4 consecutive warps (128 threads), one per SM partition: wgmma needs all four. "
            f"1 producer + {consumers} consumer warpgroups = {threads // 32} warps, {threads} threads "
            f"(4:{4 * consumers} counted in warps). Each consumer owns {bm} rows of Q: {cta_rows} rows per block."
        )
        s.say(
            f"setmaxnreg rebalances registers: {g.regs_per_sm:,} / {threads} threads = {regs['even_split']} each; "
            f"the producer drops to {regs['producer_regs']} and the consumers rise to {regs['consumer_regs']}. "
            f"{fit}: latency is hidden by asynchronous copies and MMAs, not by warps."
        )
        return "TMA thread"
    if arch == "ampere":
        s.say(
            f"mma.sync is a warp instruction (m16n8k16: 16 rows), so no warpgroup is needed and there is no "
            f"producer: {consumers} group(s) of 4 warps = {threads // 32} warps, {threads} threads, each group "
            f"owning {bm} rows of Q ({bm // 4} per warp, {bm // 64} m16 slab(s)): {cta_rows} rows per block. Every "
            "thread issues cp.async for its share of the next K/V tile, then computes."
        )
        s.say(
            f"No setmaxnreg on {'Ada' if g.arch == 'ada' else 'Ampere'}: all {threads} threads get the same "
            f"budget, the most with which one "
            f"block fits ({g.regs_per_sm:,} registers per SM, at most {g.max_regs_per_thread} per thread): "
            f"{launch_regs} each. {fit}; latency is hidden by cp.async stages and the other warps."
        )
        return "block's cp.async threads"
    s.say(
        f"tcgen05.mma is issued by a single thread, so the MMA needs one warp, not warpgroups; one more warp "
        f"issues TMA. {consumers} softmax warpgroup(s) of 128 threads each own a {bm}-row Q tile: {threads} "
        f"threads, {cta_rows} rows per block."
    )
    s.say(
        f"S and O accumulate in Tensor Memory, not registers: the {launch_regs} registers per thread at launch "
        f"(the most with which one block of {threads} threads fits) hold softmax's slice of S after tcgen05.ld, not the accumulators. "
        f"{fit}."
    )
    return "TMA thread"


def _instruction(p: _Attention) -> _Mma:
    """The MMA instruction of S = Q.K^T on this GPU: wgmma, mma.sync's m16n8 or one CTA's tcgen05.mma."""
    d, bm, bn, dt, g, native, arch = p.d, p.bm, p.bn, p.dt, p.g, p.native, p.arch
    sm = tensorcore.sm_flops_per_cycle(g, dt)
    per_sm = sm["flops_per_cycle_per_sm"]
    k16 = native.k
    slices = cdiv(d, k16)
    if arch == "hopper":
        w = tensorcore.wgmma(bn, dt, g)
        shape, inst_flops, inst_cycles = [w.m, w.n, w.k], w.flops, w.cycles
    elif arch == "ampere":
        shape = [mma.MMA_SYNC_M, mma.MMA_SYNC_N, k16]
        inst_flops = 2 * mma.MMA_SYNC_M * mma.MMA_SYNC_N * k16
        inst_cycles = inst_flops / mma.flops_per_cycle_per_tensor_core(g, dt)  # on its partition's Tensor Core
    else:
        inst_m = min(bm, mma.TCGEN05_M)  # one CTA's tcgen05.mma takes at most 128 rows
        shape = [inst_m, bn, k16]
        inst_flops = 2 * inst_m * bn * k16
        inst_cycles = inst_flops / per_sm
    return _Mma(sm, shape, slices, inst_flops, inst_cycles)


def _mma(r: Report, p: _Attention) -> _Mma:
    d, bm, bn, dt, g, arch = p.d, p.bm, p.bn, p.dt, p.g, p.arch
    # 3. One MMA instruction and the SM's rate.
    mm = _instruction(p)
    sm, per_sm, k16, slices, inst_flops, inst_cycles = (
        mm.sm, mm.per_sm, mm.k, mm.slices, mm.inst_flops, mm.inst_cycles
    )  # fmt: skip
    s = r.step(
        "wgmma" if arch == "hopper" else "mma",
        "One wgmma, and what an SM does per cycle" if arch == "hopper" else "One MMA, and what an SM does per cycle",
        instruction=p.native.instruction,
        shape=mm.shape,
        k_slices=slices,
        flops_per_instruction=inst_flops,
        flops_per_cycle_per_sm=per_sm,
        cycles_per_instruction=inst_cycles,
        tensor_cores_per_sm=sm["tensor_cores_per_sm"],
        macs_per_tensor_core_per_cycle=sm["macs_per_tensor_core_per_cycle"],
        sms=g.sms,
        clock_ghz=sm["clock_ghz"],
        peak_tflops=sm["peak_tflops"],
    )
    inst_m, inst_n, inst_k = mm.shape
    if arch == "hopper":
        s.say(
            f"S = Q.K^T for one consumer is [{inst_m}, {bn}] over K = d = {d}: wgmma m{inst_m}n{inst_n}k{inst_k} takes "
            f"{inst_k} of K at a time, so {d} / {inst_k} = {slices} instructions accumulate S in registers; S never "
            "goes back to shared memory."
        )
        s.say(
            f"One instruction: 2 x {inst_m} x {inst_n} x {inst_k} = {inst_flops:,} FLOPs. An SM has {sm['tensor_cores_per_sm']} "
            f"Tensor Cores x {sm['macs_per_tensor_core_per_cycle']} multiply-adds x 2 = {per_sm} "
            f"FLOPs per cycle, so one wgmma takes {inst_cycles:g} cycles ({inst_cycles / bn:g} N). Check: {sm['formula']}, "
            f"the {g.name}'s dense {dt} peak."
        )
    elif arch == "ampere":
        per_warp = (bm // 4 // mma.MMA_SYNC_M) * (bn // mma.MMA_SYNC_N) * slices
        s.values["instructions_per_warp_per_tile"] = per_warp
        s.say(
            f"S = Q.K^T: each warp's {bm // 4} rows x {bn} keys over d = {d} is ({bm // 4}/16) x ({bn}/8) x "
            f"({d}/{k16}) = {per_warp} mma.sync m16n8k{k16} per K/V tile, accumulating S in the warp's registers."
        )
        s.say(
            f"One instruction: 2 x 16 x 8 x {k16} = {inst_flops:,} FLOPs on the warp's partition Tensor Core "
            f"({mma.flops_per_cycle_per_tensor_core(g, dt)} FLOPs per cycle): {inst_cycles:g} cycles. An SM has "
            f"{sm['tensor_cores_per_sm']} x {sm['macs_per_tensor_core_per_cycle']} x 2 = {per_sm} FLOPs per cycle; "
            f"check: {sm['formula']}, the {g.name}'s dense {dt} peak."
        )
    else:
        s.say(
            f"S = Q.K^T for one Q tile is [{bm}, {bn}] over d = {d}: {cdiv(bm, inst_m)} x {slices} tcgen05.mma "
            f"m{inst_m}n{bn}k{k16} from one thread, accumulating S in Tensor Memory."
        )
        s.say(
            f"One instruction: 2 x {inst_m} x {bn} x {k16} = {inst_flops:,} FLOPs at {per_sm} FLOPs per cycle per SM "
            f"({sm['tensor_cores_per_sm']} x {sm['macs_per_tensor_core_per_cycle']} x 2, "
            f"{per_sm / _gpus.tensor_flops_per_cycle_per_sm(_gpus.get('h100-sxm'), dt):g}x Hopper's): "
            f"{inst_cycles:g} cycles. Check: {sm['formula']}, the {g.name}'s dense {dt} peak."
        )
    return mm


def _feed(r: Report, p: _Attention, mm: _Mma) -> tuple[float, float]:
    """4. Feeding the Tensor Cores: returns the break-even N (NaN where rows per warp, not N, decide) and the
    compute / feed ratio at this N."""
    if p.arch == "hopper":
        return _feed_wgmma(r, p, mm)
    if p.arch == "ampere":
        return _feed_warps(r, p)
    return _feed_tcgen05(r, p, mm)


def _feed_wgmma(r: Report, p: _Attention, mm: _Mma) -> tuple[float, float]:
    bn, dt, g = p.bn, p.dt, p.g
    wk = mm.k  # wgmma's K
    table = tensorcore.feed_table((64, 128, 256), dt, "SS", g)
    f = tensorcore.smem_feed(bn, dt, "SS", g)
    frs = tensorcore.smem_feed(bn, dt, "RS", g)
    s = r.step(
        "feed",
        "Feeding the Tensor Cores from shared memory (order of magnitude)",
        smem_bytes_per_cycle=f.smem_bytes_per_cycle,
        a_bytes=f.a_bytes,
        a_cycles=f.a_cycles,
        b_cycles_per_n=f.b_cycles / f.n,
        compute_cycles_per_n=f.compute_cycles / f.n,
        break_even_n=f.break_even_n,
        ratios={str(x.n): x.ratio for x in table},
        limit_ratio=f.limit_ratio,
        ratio_at_n=f.ratio,
        rs_ratio=frs.ratio,
        published=False,
    )
    s.say(
        f"Shared memory delivers 32 banks x 4 B = {f.smem_bytes_per_cycle} B per cycle. A [64, {wk}] is "
        f"{f.a_bytes:,} B = {f.a_cycles:g} cycles, re-read by every wgmma (a fixed cost); B [{wk}, N] is "
        f"{f.b_cycles / f.n:g} N cycles; the instruction computes for {f.compute_cycles / f.n:g} N cycles."
    )
    ratios = " / ".join(f"{x.ratio:.2f}" for x in table)
    s.say(
        f"Compute >= feed: {f.compute_cycles / f.n:g} N >= {f.a_cycles:g} + {f.b_cycles / f.n:g} N -> "
        f"N >= {f.break_even_n:g}. Compute / feed at N = 64 / 128 / 256: {ratios}, at most {f.limit_ratio:g}: "
        f"M is pinned at 64, so the {f.a_cycles:g} cycles thin out but never vanish. Here N = {bn}: {f.ratio:.2f}."
    )
    s.say(
        f"With A from registers (RS, as FA3 feeds P to P.V) the {f.a_cycles:g} cycles go: ratio {frs.ratio:g} at "
        "any N. The real bandwidth of wgmma's operand path is not published, so N >= 64 is an order of magnitude."
    )
    return f.break_even_n, f.ratio


def _feed_warps(r: Report, p: _Attention) -> tuple[float, float]:
    consumers, bn, cta_rows, dt, g, k16 = p.consumers, p.bn, p.cta_rows, p.dt, p.g, p.native.k
    wf = mma.warp_feed(cta_rows, 4 * consumers, bn, dt, g, q_in_registers=False)
    wq = mma.warp_feed(cta_rows, 4 * consumers, bn, dt, g, q_in_registers=True)
    s = r.step(
        "feed",
        "Feeding the Tensor Cores through registers (order of magnitude)",
        smem_bytes_per_cycle=g.smem_bytes_per_cycle_per_sm,
        compute_cycles_per_k_step=wf.compute_cycles,
        feed_cycles_per_k_step=wf.feed_cycles,
        ratio_at_n=wf.ratio,
        ratio_q_in_registers=wq.ratio,
        rows_per_warp=cta_rows // (4 * consumers),
        break_even_rows_per_warp=wf.break_even_rows_per_warp,
        published=False,
    )
    s.say(
        f"mma.sync reads only registers: each warp first copies its operands out of shared memory with ldmatrix "
        f"(32 banks x 4 B = {g.smem_bytes_per_cycle_per_sm} B per cycle). The warps split the rows, so every "
        f"one of the {4 * consumers} warps reads the whole K slice [{bn}, {k16}] each k-step, and its own rows of "
        f"Q: {wf.feed_cycles:g} cycles of shared memory against {wf.compute_cycles:g} of compute, ratio "
        f"{wf.ratio:.2f}."
    )
    s.say(
        f"Q is the same for every K/V tile, so holding it in registers removes its share: ratio {wq.ratio:.2f}, "
        f"which is rows per warp / {wf.break_even_rows_per_warp:g}. On Ampere the rows a warp owns, not N, set "
        f"this bound: below {wf.break_even_rows_per_warp:g} rows per warp shared memory cannot keep up (the "
        "128 B/cycle bank model, an order of magnitude). O = P.V takes P from registers, where softmax left it."
    )
    return float("nan"), wf.ratio


def _feed_tcgen05(r: Report, p: _Attention, mm: _Mma) -> tuple[float, float]:
    bn, dt, g, per_sm, k16 = p.bn, p.dt, p.g, mm.per_sm, mm.k
    inst_m = mm.shape[0]
    fi = mma.instruction_feed(inst_m, bn, dt, g, a_from_smem=True)
    ft = mma.instruction_feed(inst_m, bn, dt, g, a_from_smem=False)
    f128 = mma.instruction_feed(128, bn, dt, g, a_from_smem=True)
    s = r.step(
        "feed",
        "Feeding the Tensor Cores from shared memory (order of magnitude)",
        smem_bytes_per_cycle=g.smem_bytes_per_cycle_per_sm,
        a_cycles=fi.a_cycles,
        b_cycles_per_n=fi.b_cycles / bn,
        compute_cycles_per_n=fi.compute_cycles / bn,
        break_even_n=fi.break_even_n,
        ratio_at_n=fi.ratio,
        limit_ratio=fi.limit_ratio,
        a_from_tmem_ratio=ft.ratio,
        ratio_at_m128=f128.ratio,
        published=False,
    )
    be = f"N >= {fi.break_even_n:g}" if fi.break_even_n != float("inf") else "no N keeps up"
    s.say(
        f"The Tensor Cores do {per_sm} FLOPs per cycle against the same {g.smem_bytes_per_cycle_per_sm} B per "
        f"cycle of shared memory. A [{inst_m}, {k16}] is {fi.a_cycles:g} cycles, B [{k16}, N] {fi.b_cycles / bn:g} N; "
        f"the instruction computes {fi.compute_cycles / bn:g} N: {be}; here N = {bn}: {fi.ratio:.2f} "
        f"(at M = 128: {f128.ratio:.2f}). The rate per SM grew against the same bytes per cycle, so the rows per "
        "MMA must grow with it."
    )
    s.say(
        f"O = P.V can take P as A from Tensor Memory: ratio {ft.ratio:g}. The operand path's real bandwidth is "
        "not published: an order of magnitude."
    )
    return fi.break_even_n, fi.ratio


def _registers(r: Report, p: _Attention, b: _Block) -> tensorcore.RegisterBudget:
    d, bm, bn, consumers, dt, g, arch = p.d, p.bm, p.bn, p.consumers, p.dt, p.g, p.arch
    regs, threads, launch_regs, cap = b.regs, b.threads, b.launch_regs, b.budget
    # 5. Registers (Hopper, Ampere): N's upper bound.
    rb = tensorcore.register_budget(d, bn, bm, dt, g)
    rb256 = tensorcore.register_budget(d, 256, bm, dt, g)
    s = r.step(
        "registers",
        "Registers per computing thread: N's upper bound",
        s=rb.s,
        p=rb.p,
        o=rb.o,
        stats=rb.stats,
        addresses=rb.addresses,
        total=rb.total,
        limit=rb.limit,
        fits=rb.fits,
        at_n256_accumulators=rb256.accumulators,
        at_n256_total=rb256.total,
        at_n256_fits=rb256.fits,
        max_n=rb.max_n,
        max_n_pow2=rb.max_n_pow2,
        setmaxnreg_consumer=regs["consumer_regs"] if regs else None,
        budget_per_thread=cap,
        fits_budget=rb.total <= cap,
    )
    owner = "128 threads" if arch == "hopper" else "4 warps (each m16n8 accumulator tile is 4 fp32 per thread)"
    s.say(
        f"S [{bm}, N] fp32 over {owner} is {bm}N/128 per thread ({rb.s:g} at N = {bn}); O [{bm}, {d}] fp32 is "
        f"{rb.o:g}; P in {dt} {rb.p:g}; softmax max and sum {rb.stats:g}; addresses and loop state ~{rb.addresses} "
        f"(a model figure): {rb.total:g} of {rb.limit} ({'fits' if rb.fits else 'does NOT fit'})."
    )
    tail = (
        f"under 1 producer + {consumers} consumers setmaxnreg gives the consumers {regs['consumer_regs']}"
        if arch == "hopper"
        else f"without setmaxnreg each of the {threads} threads may have {launch_regs}"
    )
    s.say(
        f"At N = 256, S and O alone take {rb256.s:g} + {rb256.o:g} = {rb256.accumulators:g} of {rb256.limit}, "
        f"and P, the statistics and addresses bring it to {rb256.total:g}"
        f"{': too many' if not rb256.fits else ''}. The largest N that fits is {rb.max_n} (the largest power of "
        f"two {rb.max_n_pow2}); {tail}. "
        + (
            "Shared memory sets N's lower bound, registers its upper bound."
            if arch == "hopper"
            else "Registers set N's upper bound."
        )
    )
    return rb


def _tmem(r: Report, p: _Attention) -> mma.TmemBudget:
    d, bm, bn, consumers, g = p.d, p.bm, p.bn, p.consumers, p.g
    # 5. Tensor Memory (Blackwell): N's upper bound.
    q_tiles = consumers * cdiv(bm, mma.TMEM_LANES)
    tm = mma.tmem_budget(bn, d, q_tiles)
    srow = bm * bn / tensorcore.WARPGROUP_THREADS
    s = r.step(
        "tmem",
        "Tensor Memory: N's upper bound",
        columns=tm.columns,
        limit_columns=tm.limit,
        lanes=mma.TMEM_LANES,
        q_tiles=q_tiles,
        fits=tm.fits,
        max_n=tm.max_n,
        softmax_s_registers_per_thread=srow,
        register_limit=g.max_regs_per_thread,
    )
    s.say(
        f"Tensor Memory is {mma.TMEM_LANES} lanes x {mma.TMEM_COLUMNS} columns of 32 bits per SM (256 KB). A "
        f"[{bm}, x] fp32 accumulator takes x columns: S {bn} + O {d} per Q tile, x {q_tiles} Q tile(s) in flight "
        f"= {tm.columns} of {tm.limit} ({'fits' if tm.fits else 'does NOT fit'}); the largest N that fits is "
        f"{tm.max_n}."
    )
    s.say(
        f"The register file no longer holds S or O: softmax reads S with tcgen05.ld, {srow:g} values per thread "
        f"if a whole row block at once (less in chunks), and writes P back. On Blackwell Tensor Memory, not the "
        f"{g.max_regs_per_thread} registers, bounds N from above; shared memory bounds it from below."
    )
    return tm


def _smem(r: Report, p: _Attention, b: _Block) -> None:
    d, bn, stages = p.d, p.bn, p.stages
    # 6. Shared memory: the pipeline depth.
    sb = b.tb["smem"]
    s = r.step("smem", "Shared memory: Q plus a ring of K/V stages", **sb)
    s.say(
        f"Q [{sb['q_rows']}, {d}] = {fmt_kib(sb['q_bytes'])}; one stage holds K and V [{bn}, {d}] = "
        f"{fmt_kib(sb['kv_stage_bytes'])}. {stages} stages: {fmt_kib(sb['total_bytes'])} of the "
        f"{fmt_kib(sb['limit_bytes'])} a block may use ({'fits' if sb['fits'] else 'does NOT fit'}); at most "
        f"{sb['max_stages']} stages fit. Most of the budget goes to the ring buffer."
    )


def _hbm(r: Report, p: _Attention) -> tuple[float, roofline.L2Reuse]:
    heads, seq_k, d, bm, consumers, bn, dt, e, g = p.heads, p.seq_k, p.d, p.bm, p.consumers, p.bn, p.dt, p.e, p.g
    hit_rate, group, cta_rows, q_blocks = p.hit_rate, p.group, p.cta_rows, p.q_blocks
    # 7. HBM: intensity = M, balance, L2.
    kv = roofline.kv_tile_intensity(bm, bn, d, dt)
    kv_cta = roofline.kv_tile_intensity(cta_rows, bn, d, dt)
    bal = roofline.machine_balance(g, dt)
    need64 = roofline.hit_rate_for_compute_roof(kv.intensity, g, dt)
    need_cta = roofline.hit_rate_for_compute_roof(kv_cta.intensity, g, dt)
    readers = q_blocks * group  # blocks that read the same K/V (all query heads of a GQA group)
    ideal = roofline.ideal_hit_rate(readers)
    h = ideal if hit_rate is None else hit_rate
    reuse = roofline.l2_reuse(kv_cta.intensity, h, g, dt)
    reuse80 = roofline.l2_reuse(kv.intensity, 0.8, g, dt)
    reuse_l2 = roofline.l2_reuse(kv_cta.intensity, h, g, dt, include_l2=True)
    kv_head_bytes = 2 * seq_k * d * e
    gqa_m = kv.intensity * group
    s = r.step(
        "hbm",
        "HBM: each K/V byte buys M FLOPs",
        kv_tile_bytes=kv.kv_bytes,
        kv_tile_flops=kv.flops,
        intensity_per_consumer=kv.intensity,
        intensity_per_block=kv_cta.intensity,
        balance=bal["hbm"],
        shortfall=bal["hbm"] / kv.intensity,
        needed_hit_rate_m64=need64,
        needed_hit_rate_block=need_cta,
        at_80_percent={"hbm_intensity": reuse80.hbm_intensity, "bound": reuse80.bound},
        readers=readers,
        ideal_hit_rate=ideal,
        hit_rate=h,
        hbm_intensity=reuse.hbm_intensity,
        bound=reuse.bound,
        l2_balance=bal["l2"],
        bound_with_l2=reuse_l2.bound,
        kv_bytes_per_head=kv_head_bytes,
        l2_bytes=g.l2_bytes,
        gqa_group=group,
        gqa_m=gqa_m,
    )
    s.say(
        f"A K/V tile is K and V [{bn}, {d}] in {dt}: 2 x {bn} x {d} x {e} = {fmt_kib(kv.kv_bytes)}; a consumer with "
        f"M = {bm} rows does 4 x {bm} x {bn} x {d} = {kv.flops:,} FLOPs on it: {kv.intensity:g} FLOP/B. N and d "
        f"cancel; M remains (the block's {consumers} consumer(s) share each tile: M = {cta_rows}, {kv_cta.intensity:g} FLOP/B)."
    )
    s.say(
        f"Balance = {_gpus.peak_flops(g, dt) / 1e12:.1f} / {g.hbm_bytes_per_s / 1e12:.2f} = {fmt_intensity(bal['hbm'])} FLOP/B: "
        f"with all K/V from HBM, M = {bm} is {bal['hbm'] / kv.intensity:.1f}x short. But the Q blocks of one head "
        f"read the same K/V, so later ones hit L2: HBM sees (1 - hit) of the bytes, intensity M / (1 - hit). "
        f"M = {bm} needs hit >= 1 - {bm}/{bal['hbm']:.0f} = {pct(need64)} (M = {cta_rows}: {pct(need_cta)}); at 80% "
        f"it reaches {fmt_intensity(reuse80.hbm_intensity)} FLOP/B. If L2 thrashes, intensity falls back toward M."
    )
    s.say(
        f"Here {q_blocks} blocks x {group} query head(s) read each K/V head ({fmt_bytes(kv_head_bytes)}; L2 holds "
        f"{fmt_bytes(g.l2_bytes)}): ideally only the first read misses, {pct(ideal)} hits"
        f"{'' if hit_rate is None else f'; you set {pct(h)}'} -> {fmt_intensity(reuse.hbm_intensity)} FLOP/B from HBM, "
        f"{reuse.bound}-bound at the HBM level. L2's own bandwidth is unpublished; at the registry's "
        f"~{g.l2_bytes_per_s / 1e12:.1f} TB/s (balance {bal['l2']:.0f}) this block would be {reuse_l2.bound}-bound: "
        "treat that as a bound of the model, not a measurement."
    )
    if group > 1:
        s.say(
            f"GQA: {group} query heads share each K/V head. Computing the group together (sharing one gather) "
            f"multiplies M by {group}: {kv.intensity:g} x {group} = {gqa_m:g} FLOP/B per consumer."
        )
    elif heads % 8 == 0:
        s.say(
            f"With GQA (say 8 query heads per K/V head, --kv-heads {heads // 8}), computing a group "
            f"together multiplies M by the group size: {kv.intensity:g} x 8 = {kv.intensity * 8:g} FLOP/B."
        )
    return h, reuse


def _pipeline(
    r: Report, p: _Attention, mm: _Mma, h: float
) -> tuple[pipeline.AttentionTileTimes, dict[str, pipeline.Timeline]]:
    seq_k, d, bm, bn, stages, dt, g, arch, per_sm = p.seq_k, p.d, p.bm, p.bn, p.stages, p.dt, p.g, p.arch, mm.per_sm
    # 8. Pipeline designs.
    tt = pipeline.attention_tile_times(d, bn, bm, dt, h, g)
    n_tiles = cdiv(seq_k, bn)
    sim_tiles = min(n_tiles, 8)
    cmp = pipeline.compare(sim_tiles, tt.load, tt.mma, tt.softmax, stages)
    s = r.step(
        "pipeline",
        "Three designs on one SM (simulated)",
        tile_cycles=tt.to_dict(),
        simulated_tiles=sim_tiles,
        designs={
            k: {
                "makespan_cycles": v.makespan,
                "tensor_utilisation": v.tensor_utilisation,
                "steady_cycles_per_tile": v.steady_cycles_per_tile,
            }
            for k, v in cmp.items()
        },
        timelines={k: v.to_dict() for k, v in cmp.items()},
    )
    s.say(
        f"Per consumer and K/V tile: GEMMs 4 x {bm} x {bn} x {d} / {per_sm} = {tt.mma:g} cycles; "
        f"softmax's {bm} x {bn} exponentials at {pipeline.SFU_PER_SM_PER_CYCLE} per cycle = {tt.softmax:g} cycles; "
        f"the tile's {fmt_kib(tt.kv_tile_bytes)} at {pct(1 - h)} misses = {tt.load:.0f} cycles of this SM's HBM share."
    )
    s.say(
        {
            "hopper": "The overlap comes from asynchronous wgmma and TMA: a consumer issues, then works while the "
            "Tensor Cores run; ping-pong alternates two consumer warpgroups.",
            "ampere": "mma.sync is synchronous for its warp, so here the overlap comes from cp.async stages (the "
            "next tile lands while this one is computed) and from the warp schedulers interleaving one group's "
            "softmax with another group's mma.sync: the ping-pong line is that interleaving at its best.",
            "blackwell": "The single MMA thread issues tcgen05 asynchronously and softmax warpgroups read S out of "
            "Tensor Memory: ping-pong alternates two Q tiles, as on Hopper.",
        }[arch]
    )
    for v in cmp.values():
        s.say(f"{v.title}: Tensor Cores busy {pct(v.tensor_utilisation)} over {sim_tiles} tiles.")
        s.lines.extend(v.ascii(64).splitlines())
    return tt, cmp


def _waves(
    r: Report, p: _Attention, b: _Block, flops: int, rf: roofline.Roofline, cmp: dict[str, pipeline.Timeline]
) -> waves.Waves:
    batch, heads, seq_q, causal, g = p.batch, p.heads, p.seq_q, p.causal, p.g
    cta_rows, q_blocks, occ = p.cta_rows, p.q_blocks, b.occ
    # 9. Waves.
    blocks = batch * heads * q_blocks
    gw = waves.grid_waves(blocks, g.sms, max(occ.blocks_per_sm, 1))
    ps = waves.persistent_schedule(blocks, g.sms)
    util = cmp["pingpong"].tensor_utilisation
    # The floor is the roofline's slower term: compute for long sequences, memory for short ones (S = 1).
    est = rf.time_s / (util * gw.efficiency) if util > 0 else float("inf")
    s = r.step(
        "waves",
        "Blocks over the SMs, and the time",
        blocks=blocks,
        q_blocks_per_head=q_blocks,
        waves=gw.waves,
        wave_efficiency=gw.efficiency,
        persistent_efficiency=ps.efficiency,
        tensor_utilisation=util,
        estimate_s=est,
        estimate_tflops=flops / est / 1e12 if est else None,
    )
    s.say(
        f"{batch} x {heads} heads x ceil({seq_q}/{cta_rows}) = {blocks} blocks on {g.sms} SMs: {gw.waves:.2f} waves, "
        f"{pct(gw.efficiency)} of SM-rounds used"
        + (
            "; with causal masking blocks differ in length, which a persistent scheduler (longest first) evens out."
            if causal
            else "."
        )
    )
    floor = (
        f"compute {fmt_time(rf.compute_s)}"
        if rf.compute_s >= rf.time_s
        else f"the {rf.bound} floor {fmt_time(rf.time_s)} (compute alone: {fmt_time(rf.compute_s)})"
    )
    s.say(
        f"Estimate for the design above: {floor} / (ping-pong utilisation {pct(util)} x "
        f"waves {pct(gw.efficiency)}) = {fmt_time(est)}, ~{fmt_intensity(flops / est / 1e12)} TFLOP/s: the pipeline sketch's "
        "ideal, with no calibration"
        + (
            "; that is less than a kernel launch takes, so the time model's figure below, which counts the "
            "launch, is the one to read."
            if est < 2e-6
            else "."
        )
    )
    pm = prediction(
        s, "attention", p.problem, g.key, what="tilewise's Triton attention kernel at its default (the advisor's top-1)",
        floor_s=rf.time_s,
    )  # fmt: skip
    if pm is not None:
        s.values["model_tflops"] = flops / (pm.ms * 1e-3) / 1e12
        s.say(
            f"That is ~{flops / (pm.ms * 1e-3) / 1e12:.0f} TFLOP/s for the Triton kernel; the FA3 design walked above "
            "(tilewise's Gluon kernel, which runs on Hopper for fp16/bf16 at D 128/256) has no model family yet."
        )
    return gw


def _advice_tile(
    r: Report,
    p: _Attention,
    b: _Block,
    mm: _Mma,
    feed: tuple[float, float],
    rb: tensorcore.RegisterBudget | None,
    tm: mma.TmemBudget | None,
) -> None:
    """Advice on the tile: N against registers or Tensor Memory and the feed, the rows per warp, the stages."""
    bn, consumers, cta_rows, stages, native, arch = p.bn, p.consumers, p.cta_rows, p.stages, p.native, p.arch
    break_even, feed_ratio = feed
    cap, sb, inst_m = b.budget, b.tb["smem"], mm.shape[0]
    if tm is not None:
        if not tm.fits:
            r.advice.append(
                f"S and O of {tm.tiles} Q tile(s) need {tm.columns} Tensor Memory columns of {tm.limit}: "
                f"use N <= {tm.max_n}."
            )
    elif rb is not None and rb.total > cap:
        r.advice.append(f"N = {bn} overflows the registers ({rb.total:g} > {cap}): use N <= {rb.max_n}.")
    if arch != "ampere" and bn < break_even and math.isfinite(break_even):
        r.advice.append(f"N = {bn} < {break_even:g}: shared memory cannot feed {native.name}; use N >= {break_even:g}.")
    if arch == "blackwell" and break_even == float("inf"):
        r.advice.append(f"M = {inst_m} rows per MMA cannot be fed from shared memory at any N: use 128-row Q tiles.")
    if arch == "ampere" and feed_ratio < 1:
        r.advice.append(
            f"Shared memory cannot feed the warps ({feed_ratio:.2f}): hold Q in registers and give each warp "
            f"more rows ({cta_rows // (4 * consumers)} now)."
        )
    if not sb["fits"]:
        r.advice.append(f"{stages} stages need {fmt_kib(sb['total_bytes'])}: at most {sb['max_stages']} fit.")


def _advice_schedule(
    r: Report,
    tt: pipeline.AttentionTileTimes,
    cmp: dict[str, pipeline.Timeline],
    h: float,
    reuse: roofline.L2Reuse,
    gw: waves.Waves,
) -> None:
    """Advice on the schedule: ping-pong, L2 reuse of K/V, the tail wave."""
    if cmp["pingpong"].tensor_utilisation > cmp["ring"].tensor_utilisation + 0.05:
        r.advice.append(
            f"Ping-pong the consumers: softmax ({tt.softmax:g} cycles) hides behind the other consumer's GEMMs "
            f"({pct(cmp['ring'].tensor_utilisation)} -> {pct(cmp['pingpong'].tensor_utilisation)} busy)."
        )
    if reuse.bound != "compute":
        r.advice.append(
            f"HBM-bound at {pct(h)} L2 hits: raise M (GQA packing, larger blocks) or keep blocks of one head "
            "together in time so they share K/V in L2."
        )
    if gw.efficiency < 0.9:
        r.advice.append(f"Tail wave: {pct(gw.efficiency)} of SM-rounds used; a persistent schedule helps.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", type=cli_int, default=4, help="batch size (default 4)")
    p.add_argument("--heads", type=cli_int, default=16, help="query heads (default 16)")
    p.add_argument("--kv-heads", type=cli_int, default=None, help="K/V heads for GQA (default: = heads)")
    p.add_argument("--seq-q", "--seq-len", type=cli_int, default=8192, dest="seq_q", help="query length (default 8192)")
    p.add_argument("--seq-k", type=cli_int, default=None, help="key length (default: = seq-q)")
    p.add_argument("--head-dim", type=cli_int, default=128, help="head dimension d (default 128)")
    p.add_argument("--causal", action="store_true", help="causal mask")
    p.add_argument("--block-m", type=cli_int, default=None,
                   help="Q rows per consumer warpgroup (default 64; --backward: the kernel's tile)")  # fmt: skip
    p.add_argument("--consumers", type=cli_int, default=2, help="consumer warpgroups per block (default 2)")
    p.add_argument("--block-n", type=cli_int, default=None,
                   help="K/V tile N, the wgmma's N (default 128; --backward: the kernel's tile)")  # fmt: skip
    p.add_argument("--stages", type=cli_int, default=None,
                   help="K/V ring-buffer stages (default 2; --backward: the kernel's)")  # fmt: skip
    p.add_argument("--dtype", default="bf16", help="bf16 or fp16 (default bf16)")
    p.add_argument("--gpu", default=_gpus.DEFAULT_GPU, help=f"a Hopper registry name (default {_gpus.DEFAULT_GPU})")
    p.add_argument("--hit-rate", type=float, default=None, help="L2 hit rate of K/V reads (default: ideal reuse)")
    attention_backward.add_arguments(p)


def from_args(a: argparse.Namespace) -> Report:
    if getattr(a, "backward", False):
        return attention_backward.from_args(a)
    attention_backward.refuse_without_backward(a)
    if a.hit_rate is not None and not (0 <= a.hit_rate <= 1):
        raise InputError(f"--hit-rate must be in [0, 1], got {a.hit_rate}")
    return explain(
        batch=a.batch,
        heads=a.heads,
        kv_heads=a.kv_heads,
        seq_q=a.seq_q,
        seq_k=a.seq_k,
        head_dim=a.head_dim,
        causal=a.causal,
        block_m=cast(int, DEFAULTS["block_m"]) if a.block_m is None else a.block_m,
        consumers=a.consumers,
        block_n=cast(int, DEFAULTS["block_n"]) if a.block_n is None else a.block_n,
        stages=cast(int, DEFAULTS["stages"]) if a.stages is None else a.stages,
        dtype=a.dtype,
        gpu=a.gpu,
        hit_rate=a.hit_rate,
    )


__all__ = ["DEFAULTS", "add_arguments", "explain", "from_args"]
