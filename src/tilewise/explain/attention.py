"""`tilewise explain attention`: why FlashAttention-3 picks its tile sizes on Hopper.

The default is the tips document's FA3 forward example (../shared/seeds/000): head dim 128,
64 rows of Q per consumer warpgroup (two consumers, 128 rows per block), K/V tiles of
N = 128, bf16, on an H100 SXM. The walk follows the seed: the block's warpgroups; one
wgmma and the SM's 4096 FLOPs/cycle (989.4 TFLOPS = 4096 x 132 x 1.83 GHz); feeding it from
shared memory (16 cycles for A, N >= 64, ratios 1.00 / 1.33 / 1.60, limit 2); the register
budget (192 of 255 at N = 256); shared memory and the pipeline depth; HBM (intensity = M,
balance 295, ~78% L2 hits at M = 64; GQA multiplies M by the group size); the three pipeline
designs; waves. Every number comes from `tilewise.model`; tests/test_explain_attention.py
asserts the seed's.
"""

from __future__ import annotations

import argparse

from tilewise import gpus as _gpus
from tilewise.errors import InputError, positive_int, require
from tilewise.explain.report import Report, fmt_bytes, fmt_flops, fmt_kib, fmt_time, pct
from tilewise.model import latency, pipeline, roofline, tensorcore, traffic, waves
from tilewise.model.occupancy import occupancy

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
    gpu="h100-sxm",
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
    gpu: str = "h100-sxm",
    hit_rate: float | None = None,
) -> Report:
    """Report for an attention forward of Q [batch, heads, seq_q, d] against K, V [batch, kv_heads, seq_k, d]."""
    batch, heads = positive_int("batch", batch), positive_int("heads", heads)
    kv_heads = heads if kv_heads is None else positive_int("kv_heads", kv_heads)
    require(
        heads % kv_heads == 0,
        f"heads must be a multiple of kv_heads (GQA), got heads={heads}, kv_heads={kv_heads}",
    )
    seq_q = positive_int("seq_q", seq_q)
    seq_k = seq_q if seq_k is None else positive_int("seq_k", seq_k)
    d = positive_int("head_dim", head_dim, maximum=256)
    bm = positive_int("block_m", block_m, maximum=256)
    require(bm % tensorcore.WGMMA_M == 0, f"block_m must be a multiple of wgmma's M = 64, got {bm}")
    consumers = positive_int("consumers", consumers, maximum=3)
    bn = tensorcore.check_n(block_n)
    stages = positive_int("stages", stages, maximum=16)
    g = _gpus.get(gpu)
    require(g.wgmma, f"gpu must be a Hopper GPU with wgmma (h100-sxm, h100-pcie, h200), got {g.key}")
    dt = _gpus.dtype_name(dtype)
    require(dt in ("bf16", "fp16"), f"dtype must be bf16 or fp16 for this walk, got {dtype!r}")
    e = _gpus.element_bytes(dt)
    group = heads // kv_heads
    cta_rows = bm * consumers

    r = Report(
        kind="attention",
        title=(
            f"Attention forward [{batch}, {heads} heads ({kv_heads} KV), {seq_q} x {seq_k}, d={d}]"
            f"{' causal' if causal else ''} ({dt}) on {g.name}"
        ),
        gpu={"key": g.key, "name": g.name},
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
            hit_rate=hit_rate,
        ),
    )

    # 1. The problem.
    flops = traffic.attention_flops(batch, heads, seq_q, seq_k, d, causal)
    nbytes = traffic.attention_bytes(batch, heads, kv_heads, seq_q, seq_k, d, dt)
    rf_ideal = roofline.time(g, flops, nbytes, dt)
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
        f"S = Q.K^T and O = P.V: 4 x d FLOPs per (query, key) pair{' left unmasked' if causal else ''} = "
        f"{fmt_flops(flops)}. Reading Q, K, V once and writing O once is {fmt_bytes(nbytes)}: "
        f"{rf_ideal.intensity:.0f} FLOP/B if every byte were read once. The question is what one block sees."
    )

    # 2. The block: warpgroups.
    wt = tensorcore.WARPGROUP_THREADS
    threads = (1 + consumers) * wt
    regs = tensorcore.setmaxnreg_split(1, consumers, 24, g)
    tb = tensorcore.attention_tile_budget(d, bn, bm, dt, stages, g, consumers)
    launch_regs = min(g.max_regs_per_thread, (g.regs_per_sm // threads) // 8 * 8)
    occ = occupancy(g, threads, launch_regs, 0, min(tb["smem"]["total_bytes"], g.smem_per_block_optin))
    lh = latency.warps_to_hide_memory(gpu=g)
    ring = latency.async_in_flight(stages, tb["smem"]["kv_stage_bytes"], gpu=g)
    s = r.step(
        "block",
        "One block per SM: a producer and consumer warpgroups",
        warpgroups=1 + consumers,
        consumers=consumers,
        threads=threads,
        warps=threads // 32,
        rows_per_consumer=bm,
        rows_per_block=cta_rows,
        launch_registers=launch_regs,
        producer_registers=regs["producer_regs"],
        consumer_registers=regs["consumer_regs"],
        blocks_per_sm=occ.blocks_per_sm,
        occupancy=occ.occupancy,
        latency_cycles=lh.latency_cycles,
        bytes_in_flight_needed=lh.in_flight_needed,
        warps_needed_16b_loads=lh.warps_needed,
        ring_bytes_in_flight=ring["bytes_in_flight"],
    )
    s.say(
        f"A warpgroup is 4 consecutive warps (128 threads), one per SM partition: wgmma needs all four. "
        f"1 producer + {consumers} consumer warpgroups = {threads // 32} warps, {threads} threads "
        f"(4:{4 * consumers} counted in warps). Each consumer owns {bm} rows of Q: {cta_rows} rows per block."
    )
    s.say(
        f"setmaxnreg rebalances registers: {g.regs_per_sm:,} / {threads} threads = {regs['even_split']} each; "
        f"the producer drops to {regs['producer_regs']} and the consumers rise to {regs['consumer_regs']}. "
        f"With {fmt_kib(tb['smem']['total_bytes'])} of shared memory, {occ.blocks_per_sm} block fits per SM "
        f"({pct(occ.occupancy)} occupancy): latency is hidden by asynchronous copies and MMAs, not by warps."
    )
    s.say(
        f"Little's law: this SM's HBM share ({lh.throughput_per_cycle:.1f} B/cycle) through ~{lh.latency_cycles:.0f} "
        f"cycles of latency (a model figure) needs {fmt_kib(lh.in_flight_needed)} in flight: {lh.warps_needed} warps "
        f"of 16-byte loads, or the ring's {stages - 1} stage(s) ahead = {fmt_kib(ring['bytes_in_flight'])} from one "
        "TMA thread."
    )

    # 3. One wgmma and the SM's rate.
    w = tensorcore.wgmma(bn, dt, g)
    sm = tensorcore.sm_flops_per_cycle(g, dt)
    slices = -(-d // w.k)
    s = r.step(
        "wgmma",
        "One wgmma, and what an SM does per cycle",
        shape=[w.m, w.n, w.k],
        k_slices=slices,
        flops_per_instruction=w.flops,
        flops_per_cycle_per_sm=w.flops_per_cycle_per_sm,
        cycles_per_instruction=w.cycles,
        tensor_cores_per_sm=sm["tensor_cores_per_sm"],
        macs_per_tensor_core_per_cycle=sm["macs_per_tensor_core_per_cycle"],
        sms=g.sms,
        clock_ghz=sm["clock_ghz"],
        peak_tflops=sm["peak_tflops"],
    )
    s.say(
        f"S = Q.K^T for one consumer is [{w.m}, {bn}] over K = d = {d}: wgmma m{w.m}n{w.n}k{w.k} takes "
        f"{w.k} of K at a time, so {d} / {w.k} = {slices} instructions accumulate S in registers; S never "
        "goes back to shared memory."
    )
    s.say(
        f"One instruction: 2 x {w.m} x {w.n} x {w.k} = {w.flops:,} FLOPs. An SM has {sm['tensor_cores_per_sm']} "
        f"Tensor Cores x {sm['macs_per_tensor_core_per_cycle']} multiply-adds x 2 = {w.flops_per_cycle_per_sm} "
        f"FLOPs per cycle, so one wgmma takes {w.cycles:g} cycles (0.5 N). Check: {sm['formula']}, "
        "the H100 SXM's dense bf16 peak."
    )

    # 4. Feeding it from shared memory.
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
        f"Shared memory delivers 32 banks x 4 B = {f.smem_bytes_per_cycle} B per cycle. A [64, {w.k}] is "
        f"{f.a_bytes:,} B = {f.a_cycles:g} cycles, re-read by every wgmma (a fixed cost); B [{w.k}, N] is "
        f"{f.b_cycles / f.n:g} N cycles; the instruction computes for {f.compute_cycles / f.n:g} N cycles."
    )
    ratios = " / ".join(f"{x.ratio:.2f}" for x in table)
    s.say(
        f"Compute >= feed: {f.compute_cycles / f.n:g} N >= {f.a_cycles:g} + {f.b_cycles / f.n:g} N -> "
        f"N >= {f.break_even_n:g}. Compute / feed at N = 64 / 128 / 256: {ratios}, at most {f.limit_ratio:g}: "
        f"M is pinned at 64, so the 16 cycles thin out but never vanish. Here N = {bn}: {f.ratio:.2f}."
    )
    s.say(
        f"With A from registers (RS, as FA3 feeds P to P.V) the 16 cycles go: ratio {frs.ratio:g} at any N. "
        "The real bandwidth of wgmma's operand path is not published, so N >= 64 is an order of magnitude."
    )

    # 5. Registers: N's upper bound.
    rb = tensorcore.register_budget(d, bn, bm, dt, g)
    rb256 = tensorcore.register_budget(d, 256, bm, dt, g)
    s = r.step(
        "registers",
        "Registers per consumer thread: N's upper bound",
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
        setmaxnreg_consumer=regs["consumer_regs"],
    )
    s.say(
        f"S [{bm}, N] fp32 over 128 threads is N/2 per thread ({rb.s:g} at N = {bn}); O [{bm}, {d}] fp32 is "
        f"{rb.o:g}; P in {dt} {rb.p:g}; softmax max and sum {rb.stats:g}; addresses and loop state ~{rb.addresses} "
        f"(a model figure): {rb.total:g} of {rb.limit} ({'fits' if rb.fits else 'does NOT fit'})."
    )
    s.say(
        f"At N = 256, S and O alone take {rb256.s:g} + {rb256.o:g} = {rb256.accumulators:g} of {rb256.limit}, "
        f"and P, the statistics and addresses bring it to {rb256.total:g}: too many. The largest N that fits is "
        f"{rb.max_n} (the largest power of two {rb.max_n_pow2}); under 1 producer + {consumers} consumers "
        f"setmaxnreg gives the consumers {regs['consumer_regs']}. Shared memory sets N's lower bound, "
        "registers its upper bound."
    )

    # 6. Shared memory: the pipeline depth.
    sb = tb["smem"]
    s = r.step("smem", "Shared memory: Q plus a ring of K/V stages", **sb)
    s.say(
        f"Q [{sb['q_rows']}, {d}] = {fmt_kib(sb['q_bytes'])}; one stage holds K and V [{bn}, {d}] = "
        f"{fmt_kib(sb['kv_stage_bytes'])}. {stages} stages: {fmt_kib(sb['total_bytes'])} of the "
        f"{fmt_kib(sb['limit_bytes'])} a block may use ({'fits' if sb['fits'] else 'does NOT fit'}); at most "
        f"{sb['max_stages']} stages fit. Most of the budget goes to the ring buffer."
    )

    # 7. HBM: intensity = M, balance, L2.
    kv = roofline.kv_tile_intensity(bm, bn, d, dt)
    kv_cta = roofline.kv_tile_intensity(cta_rows, bn, d, dt)
    bal = roofline.machine_balance(g, dt)
    need64 = roofline.hit_rate_for_compute_roof(kv.intensity, g, dt)
    need_cta = roofline.hit_rate_for_compute_roof(kv_cta.intensity, g, dt)
    q_blocks = -(-seq_q // cta_rows)
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
        f"cancel; M remains (the block's two consumers share each tile: M = {cta_rows}, {kv_cta.intensity:g} FLOP/B)."
    )
    s.say(
        f"Balance = {_gpus.peak_flops(g, dt) / 1e12:.1f} / {g.hbm_bytes_per_s / 1e12:.2f} = {bal['hbm']:.0f} FLOP/B: "
        f"with all K/V from HBM, M = {bm} is {bal['hbm'] / kv.intensity:.1f}x short. But the Q blocks of one head "
        f"read the same K/V, so later ones hit L2: HBM sees (1 - hit) of the bytes, intensity M / (1 - hit). "
        f"M = {bm} needs hit >= 1 - {bm}/{bal['hbm']:.0f} = {pct(need64)} (M = {cta_rows}: {pct(need_cta)}); at 80% "
        f"it reaches {reuse80.hbm_intensity:.0f} FLOP/B. If L2 thrashes, intensity falls back toward M."
    )
    s.say(
        f"Here {q_blocks} blocks x {group} query head(s) read each K/V head ({fmt_bytes(kv_head_bytes)}; L2 holds "
        f"{fmt_bytes(g.l2_bytes)}): ideally only the first read misses, {pct(ideal)} hits"
        f"{'' if hit_rate is None else f'; you set {pct(h)}'} -> {reuse.hbm_intensity:.0f} FLOP/B from HBM, "
        f"{reuse.bound}-bound at the HBM level. L2's own bandwidth is unpublished; at the registry's "
        f"~{g.l2_bytes_per_s / 1e12:.1f} TB/s (balance {bal['l2']:.0f}) this block would be {reuse_l2.bound}-bound: "
        "treat that as a bound of the model, not a measurement."
    )
    if group > 1:
        s.say(
            f"GQA: {group} query heads share each K/V head. Computing the group together (sharing one gather) "
            f"multiplies M by {group}: {kv.intensity:g} x {group} = {gqa_m:g} FLOP/B per consumer."
        )
    else:
        s.say(
            f"With GQA (say 8 query heads per K/V head, --kv-heads {max(1, heads // 8)}), computing a group "
            f"together multiplies M by the group size: {kv.intensity:g} x 8 = {kv.intensity * 8:g} FLOP/B."
        )

    # 8. Pipeline designs.
    tt = pipeline.attention_tile_times(d, bn, bm, dt, h, g)
    n_tiles = -(-seq_k // bn)
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
        f"Per consumer and K/V tile: GEMMs 4 x {bm} x {bn} x {d} / {w.flops_per_cycle_per_sm} = {tt.mma:g} cycles; "
        f"softmax's {bm} x {bn} exponentials at {pipeline.SFU_PER_SM_PER_CYCLE} per cycle = {tt.softmax:g} cycles; "
        f"the tile's {fmt_kib(tt.kv_tile_bytes)} at {pct(1 - h)} misses = {tt.load:.0f} cycles of this SM's HBM share."
    )
    for v in cmp.values():
        s.say(f"{v.title}: Tensor Cores busy {pct(v.tensor_utilisation)} over {sim_tiles} tiles.")
        s.lines.extend(v.ascii(64).splitlines())

    # 9. Waves.
    blocks = batch * heads * q_blocks
    gw = waves.grid_waves(blocks, g.sms, max(occ.blocks_per_sm, 1))
    ps = waves.persistent_schedule(blocks, g.sms)
    util = cmp["pingpong"].tensor_utilisation
    rf = roofline.time(g, flops, nbytes, dt)
    est = rf.compute_s / (util * gw.efficiency) if util > 0 else float("inf")
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
    s.say(
        f"Estimate: compute {fmt_time(rf.compute_s)} / (ping-pong utilisation {pct(util)} x waves "
        f"{pct(gw.efficiency)}) = {fmt_time(est)}, ~{flops / est / 1e12:.0f} TFLOP/s: a model, not a measurement."
    )

    # Advice from the numbers.
    if not rb.fits:
        r.advice.append(f"N = {bn} overflows the registers ({rb.total:g} > {rb.limit}): use N <= {rb.max_n}.")
    if bn < f.break_even_n:
        r.advice.append(f"N = {bn} < {f.break_even_n:g}: shared memory cannot feed wgmma; use N >= 64.")
    if not sb["fits"]:
        r.advice.append(f"{stages} stages need {fmt_kib(sb['total_bytes'])}: at most {sb['max_stages']} fit.")
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
    return r


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", type=int, default=4, help="batch size (default 4)")
    p.add_argument("--heads", type=int, default=16, help="query heads (default 16)")
    p.add_argument("--kv-heads", type=int, default=None, help="K/V heads for GQA (default: = heads)")
    p.add_argument("--seq-q", "--seq-len", type=int, default=8192, dest="seq_q", help="query length (default 8192)")
    p.add_argument("--seq-k", type=int, default=None, help="key length (default: = seq-q)")
    p.add_argument("--head-dim", type=int, default=128, help="head dimension d (default 128)")
    p.add_argument("--causal", action="store_true", help="causal mask")
    p.add_argument("--block-m", type=int, default=64, help="Q rows per consumer warpgroup (default 64)")
    p.add_argument("--consumers", type=int, default=2, help="consumer warpgroups per block (default 2)")
    p.add_argument("--block-n", type=int, default=128, help="K/V tile N, the wgmma's N (default 128)")
    p.add_argument("--stages", type=int, default=2, help="K/V ring-buffer stages (default 2)")
    p.add_argument("--dtype", default="bf16", help="bf16 or fp16 (default bf16)")
    p.add_argument("--gpu", default="h100-sxm", help="a Hopper registry name (default h100-sxm)")
    p.add_argument("--hit-rate", type=float, default=None, help="L2 hit rate of K/V reads (default: ideal reuse)")


def from_args(a: argparse.Namespace) -> Report:
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
        block_m=a.block_m,
        consumers=a.consumers,
        block_n=a.block_n,
        stages=a.stages,
        dtype=a.dtype,
        gpu=a.gpu,
        hit_rate=a.hit_rate,
    )


__all__ = ["DEFAULTS", "add_arguments", "explain", "from_args"]
