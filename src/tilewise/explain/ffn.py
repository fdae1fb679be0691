"""`tilewise explain ffn`: FlashFFN, the fused multi-head FFN, reasoned from the attention bounds.

An FFN's hidden dimension is split into heads: heads make the flash kernel fit, and the flash
kernel keeps heads from blowing up memory. Then: why is the speedup small, and do attention's N
and M bounds apply to this kernel? Every figure below is
computed from the problem and the GPU registry:

1. the layer and its work (tilewise.model.traffic.mhffn_*);
2. why the unsplit FFN does not fit a flash kernel: the fp32 output accumulator of a row block is
   [M, d_model], against 255 registers per thread and 227 KB of shared memory;
3. why the split FFN without fusion blows up memory: the [T, H, I] intermediate is H times the
   dense FFN's [T, I], and autograd keeps several of them;
4. N carries over as the intermediate chunk (shared-memory feed of the up-projections, registers
   of the two [64, N] fp32 up-projections), M as the token rows of a block (FLOPs per weight byte);
   the weights are shared by every token block of a head, so L2 reuse decides the HBM intensity;
5. predicted time and memory, fused and unfused, and the dense SwiGLU of equal FLOPs;
6. why the speedup is small.

The backward and dense-SwiGLU counts are in tilewise.model.traffic (`mhffn_backward_flops`, ...),
the FFN register budget in tilewise.model.tensorcore (`ffn_register_budget`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from tilewise import gpus as _gpus
from tilewise import validate
from tilewise.errors import cli_int, require, shown
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
from tilewise.gpus import element_bytes
from tilewise.model import mma, roofline, tensorcore, traffic
from tilewise.util import cdiv

DEFAULTS = dict(tokens=16384, d_model=2048, heads=16, intermediate=512, block_m=128, block_n=64, gpu=_gpus.DEFAULT_GPU)

# The counts live in tilewise.model.traffic and the register budget in tilewise.model.tensorcore;
# they are re-exported here for the report's readers.
from tilewise.model.tensorcore import ffn_register_budget  # noqa: E402
from tilewise.model.traffic import (  # noqa: E402
    BACKWARD_MODES,
    dense_swiglu_flops,
    mhffn_backward_bytes,
    mhffn_backward_flops,
    mhffn_unfused_backward_bytes,
    mhffn_unfused_saved_bytes,
)

# ------------------------------------------------------------------ the report


def explain(
    tokens: int = 16384,
    d_model: int = 2048,
    heads: int = 16,
    intermediate: int = 512,
    block_m: int = 128,
    block_n: int = 64,
    dtype: str = "bf16",
    gpu: str = _gpus.DEFAULT_GPU,
) -> Report:
    """FlashFFN for x [tokens, d_model] split into `heads` heads of d_model / heads, I per head."""
    T = validate.size("tokens", tokens)
    D = validate.size("d_model", d_model)
    H = validate.size("heads", heads)
    inter = validate.size("intermediate", intermediate)
    bm = validate.size("block_m", block_m, maximum=512)
    bn = validate.size("block_n", block_n, maximum=tensorcore.WGMMA_N_MAX)
    require(D % H == 0, f"d_model must be a multiple of heads, got d_model={D}, heads={H}")
    require(bn % 8 == 0 and bn >= 16, f"block_n must be a multiple of 8 from 16 to 256 (wgmma's N), got {bn}")
    g = _gpus.get(gpu)
    dt = _gpus.dtype_name(dtype)
    require(dt in ("bf16", "fp16"), f"dtype must be bf16 or fp16, got {shown(dtype)}")
    e = element_bytes(dt)
    d = D // H
    # d_h is the K of the up-projections and the N of the down-projection's [64, d_h] accumulator.
    require(
        d % 16 == 0 and d <= tensorcore.WGMMA_N_MAX,
        f"d_model / heads (the head width d_h) must be a multiple of 16 up to {tensorcore.WGMMA_N_MAX} "
        f"(the up-projections' K, walked 16 at a time, and one MMA's N), got {D} / {H} = {d}",
    )
    validate.multiple("intermediate", inter, 16, "the down-projection's K, walked 16 at a time")
    validate.fits_memory(
        g,
        {"x and out": 2 * T * D * e, "weights": 3 * H * d * inter * e, "W_in and W_out": 2 * D * D * e},
        "the FFN's activations and weights",
    )
    p = _Ffn(T, D, H, inter, d, bm, bn, dt, e, g, mma.path(g, dt))
    r = _report(p)

    fl = _layer(r, p)
    _unsplit(r, p)
    rf_unf, fus_bytes, saved = _unfused(r, p, fl)
    regs, max_n, feed_break = _n_bound(r, p)
    w_bytes = _m_bound(r, p)
    rf_fwd, bwd = _prediction(r, p, fl, rf_unf, fus_bytes, saved)
    _small_speedup(r, p, fl, rf_unf, bwd)
    _advice(r, p, rf_fwd, feed_break, regs, max_n, w_bytes)
    return r


@dataclass(frozen=True)
class _Ffn:
    """The checked problem every step reads: sizes (T tokens, D = H x d_h, I per head), tiles, dtype, GPU, MMA path."""

    T: int
    D: int
    H: int
    inter: int
    d: int  # d_h = D / H
    bm: int
    bn: int
    dt: str
    e: int
    g: _gpus.GPU
    native: mma.MmaPath

    @property
    def wm(self) -> int:
        """The smallest block of token rows: one MMA's M (wgmma's 64, four warps of mma.sync's 16)."""
        return tensorcore.WGMMA_M

    @property
    def arch(self) -> str:
        """ampere (mma.sync: Ampere and Ada), hopper or blackwell."""
        return self.native.family

    @property
    def regs_lim(self) -> int:
        return self.g.max_regs_per_thread

    @property
    def smem_lim(self) -> int:
        return self.g.smem_per_block_optin

    @property
    def peak(self) -> float:
        return _gpus.peak_flops(self.g, self.dt)

    @property
    def inter_bytes(self) -> int:
        """The [T, H, I] intermediate."""
        return self.T * self.H * self.inter * self.e


def _report(p: _Ffn) -> Report:
    T, D, H, inter, d, bm, bn, dt, g, native, arch = (
        p.T, p.D, p.H, p.inter, p.d, p.bm, p.bn, p.dt, p.g, p.native, p.arch
    )  # fmt: skip
    r = Report.on_gpu(
        kind="ffn",
        title=f"FlashFFN: {H} heads of d_h = {d}, I = {inter} per head, {T} tokens ({dt}) on {g.name}",
        gpu=g,
        inputs=dict(tokens=T, d_model=D, heads=H, head_dim=d, intermediate=inter, block_m=bm, block_n=bn, dtype=dt),
    )

    if arch != "hopper":
        r.notes.append(
            f"The {g.name} is {arch.capitalize()}: its MMA is {native.instruction} ({native.issued_by}, "
            f"accumulating in {native.accumulator}); the feed and budget of N below follow that path."
        )
    if bm > T:
        r.notes.append(f"block_m = {bm} is more than the {T} tokens: one block, {pct(T / bm)} of its rows real.")
    return r


def _layer(r: Report, p: _Ffn) -> int:
    T, D, H, inter, d, e, inter_bytes = p.T, p.D, p.H, p.inter, p.d, p.e, p.inter_bytes
    # 1. The layer and its work.
    fl = traffic.mhffn_flops(T, H, d, inter)
    params = 3 * H * d * inter
    dense_inter_bytes = T * inter * e
    s = r.step(
        "layer",
        "The layer and its work",
        flops=fl,
        parameters=params,
        intermediate_bytes=inter_bytes,
        dense_intermediate_bytes=dense_inter_bytes,
        dense_flops=dense_swiglu_flops(T, D, inter),
    )
    s.say(
        f"z = x W_in viewed as [{T}, {H}, {d}]; per head y_h = (silu(z_h Wg_h) * (z_h Wu_h)) Wd_h with Wg_h, Wu_h "
        f"[{d}, {inter}] and Wd_h [{inter}, {d}]; out = concat_h(y_h) W_out."
    )
    s.say(
        f"3 GEMMs of 2 x T x H x d_h x I per head: {fmt_flops(fl)}, {params / 1e6:.3g} M parameters: exactly a dense "
        f"SwiGLU with d_model = {D} and intermediate {inter} ({fmt_flops(dense_swiglu_flops(T, D, inter))}). "
        f"But the intermediate is [T, H, I] = {fmt_bytes(inter_bytes)}, {H}x the dense [T, I] ({fmt_bytes(dense_inter_bytes)})."
    )
    return fl


def _acc_regs(width: int) -> float:
    """Registers per thread of a warpgroup for a [64, width] fp32 accumulator."""
    return tensorcore.WGMMA_M * width * tensorcore.ACC_BYTES / 4 / tensorcore.WARPGROUP_THREADS


def _unsplit(r: Report, p: _Ffn) -> None:
    D, H, d, e, g, arch, wm, regs_lim, smem_lim = p.D, p.H, p.d, p.e, p.g, p.arch, p.wm, p.regs_lim, p.smem_lim
    # 2. Why the unsplit FFN does not fit a flash kernel.
    x_tile = wm * D * e
    m_why = {
        "hopper": f"wgmma's M is {wm}",
        "ampere": f"4 warps of mma.sync's 16 rows make {wm}",
        "blackwell": f"tcgen05's M is {wm} or 128",
    }[arch]
    s = r.step(
        "unsplit",
        "Why the unsplit FFN does not fit a flash kernel",
        accumulator_regs_per_thread_unsplit=_acc_regs(D),
        accumulator_regs_per_thread_split=_acc_regs(d),
        accumulator_bytes_unsplit=wm * D * tensorcore.ACC_BYTES,
        register_file_bytes=g.regs_per_sm * 4,
        x_tile_bytes_unsplit=x_tile,
        z_tile_bytes_split=wm * d * e,
        smem_limit_bytes=smem_lim,
        register_limit=regs_lim,
        max_head_dim_that_fits=int(2 * (regs_lim - tensorcore.ADDRESS_REGISTERS)) // 64 * 64,
    )
    s.say(
        f"A flash kernel keeps a block of token rows on chip and walks the intermediate dimension, accumulating the "
        f"down-projection in fp32. {m_why}, so the smallest block is {wm} rows. Unsplit, the accumulator "
        f"is [{wm}, {D}] fp32 = {fmt_kib(wm * D * 4)}: {_acc_regs(D):.0f} registers per thread of a warpgroup "
        f"against a limit of {regs_lim}, {wm * D * 4 / (g.regs_per_sm * 4):.2g}x the SM's whole register file "
        f"({fmt_kib(g.regs_per_sm * 4)}). The input rows [{wm}, {D}] alone take {fmt_kib(x_tile)} of the "
        f"{fmt_kib(smem_lim)} a block may have."
    )
    s.say(
        f"Split into {H} heads of {d}: the accumulator is [{wm}, {d}] = {_acc_regs(d):.0f} registers per thread "
        f"(attention's O), the z tile {fmt_kib(wm * d * e)}. Heads make the flash kernel fit."
    )
    if arch == "blackwell":
        s.say(
            f"On Blackwell the accumulator sits in Tensor Memory instead, one column per output column: unsplit "
            f"[{wm}, {D}] needs {D} of its {mma.TMEM_COLUMNS} columns "
            f"({'fits' if D <= mma.TMEM_COLUMNS else 'does NOT fit'}), split [{wm}, {d}] needs {d}."
        )


def _unfused(r: Report, p: _Ffn, fl: int) -> tuple[roofline.Roofline, int, int]:
    T, H, d, inter, dt, e, g, inter_bytes = p.T, p.H, p.d, p.inter, p.dt, p.e, p.g, p.inter_bytes
    # 3. Why the split FFN without fusion blows up memory.
    unf_bytes = traffic.mhffn_unfused_bytes(T, H, d, inter, dt)
    fus_bytes = traffic.mhffn_bytes(T, H, d, inter, dt)
    saved = mhffn_unfused_saved_bytes(T, H, inter, dt)
    rf_unf = roofline.time(g, fl, unf_bytes, dt)
    s = r.step(
        "unfused",
        "Why the split FFN without fusion blows up memory",
        unfused_bytes=unf_bytes,
        fused_bytes=fus_bytes,
        unfused_saved_for_backward_bytes=saved,
        unfused_intensity=rf_unf.intensity,
        unfused_bound=rf_unf.bound,
        unfused_time_s=rf_unf.time_s,
    )
    s.say(
        f"Unfused, every head's gate and up activations [T, I] are written to HBM and read back: 6 passes over "
        f"{fmt_bytes(inter_bytes)}, {fmt_bytes(unf_bytes)} in all against {fmt_bytes(fus_bytes)} fused. Intensity "
        f"{fmt_intensity(rf_unf.intensity)} FLOP/B against a balance of {rf_unf.balance:.0f}: {rf_unf.bound}-bound, at best "
        f"{fmt_time(rf_unf.time_s)} ({rf_unf.attainable_flops / 1e12:.0f} TFLOP/s)."
    )
    s.say(
        f"For training, autograd keeps g, u, silu(g) and their product: {fmt_bytes(saved)} of activations for "
        f"a {fmt_bytes(T * H * d * e)} input, {saved / (T * H * d * e):.0f}x. The fused kernel keeps none: its backward "
        f"recomputes them chunk by chunk, as FlashAttention recomputes S. The flash kernel keeps heads from blowing up "
        f"memory."
    )
    return rf_unf, fus_bytes, saved


def _up_down_feed(p: _Ffn) -> tuple[float, float, float, int]:
    """Compute / feed of the up-projections (and their break-even N) and of the down-projection, on this GPU's MMA
    path, and the N the up-projections' figure is taken at."""
    d, bn, dt, g, arch, wm = p.d, p.bn, p.dt, p.g, p.arch, p.wm
    if arch == "hopper":
        feed_up = tensorcore.smem_feed(max(64, min(256, bn // 8 * 8)), dt, "SS", g.key)
        feed_dn = tensorcore.smem_feed(d, dt, "RS", g.key)
        return feed_up.ratio, feed_up.break_even_n, feed_dn.ratio, feed_up.n
    if arch == "ampere":
        wu = mma.warp_feed(wm, 4, bn, dt, g, q_in_registers=False)
        wd = mma.warp_feed(wm, 4, d, dt, g, q_in_registers=True)
        return wu.ratio, 0.0, wd.ratio, bn
    fu = mma.instruction_feed(mma.TCGEN05_M, bn, dt, g, a_from_smem=True)
    fd = mma.instruction_feed(mma.TCGEN05_M, d, dt, g, a_from_smem=False)
    return fu.ratio, fu.break_even_n, fd.ratio, bn


def _n_bound(r: Report, p: _Ffn) -> tuple[dict[str, float], int, float]:
    d, bn, dt, arch, native, wm, regs_lim = p.d, p.bn, p.dt, p.arch, p.native, p.wm, p.regs_lim
    # 4a. N: the intermediate chunk.
    regs = ffn_register_budget(wm, bn, d, dt)
    max_n = max(
        (
            n
            for n in range(16, tensorcore.WGMMA_N_MAX + 1, 16)
            if ffn_register_budget(wm, n, d, dt)["total"] <= regs_lim
        ),
        default=0,
    )
    up_ratio, up_break, dn_ratio, up_n = _up_down_feed(p)
    tmem_cols = 2 * bn + d  # g and u [128, N] fp32, the output [128, d_h] fp32
    tmem_max_n = max(0, (mma.TMEM_COLUMNS - d) // 2 // 16 * 16)
    s = r.step(
        "n_bound",
        "N carries over: the intermediate chunk",
        block_n=bn,
        instruction=native.instruction,
        up_feed_ratio=up_ratio,
        up_break_even_n=up_break,
        down_feed_ratio=dn_ratio,
        registers=regs,
        register_limit=regs_lim,
        max_block_n=max_n if arch != "blackwell" else tmem_max_n,
    )
    _n_feed_prose(s, p, up_ratio, up_break, dn_ratio, up_n)
    if arch != "blackwell":
        s.say(
            f"Registers set the upper bound, tighter than attention's: two [{wm}, N] fp32 up-projections (N per "
            f"thread), a in {dt} (N/4) and the output [{wm}, {d}] (d_h/2 = {regs['o']:.0f}). At N = {bn}: "
            f"{regs['gu']:.0f} + {regs['a']:.0f} + {regs['o']:.0f} + {regs['addresses']} addresses = "
            f"{regs['total']:.0f} of {regs_lim}; the largest N that fits is {max_n}."
        )
    else:
        s.values["tmem_columns"] = tmem_cols
        s.values["tmem_limit"] = mma.TMEM_COLUMNS
        s.say(
            f"The accumulators live in Tensor Memory, not registers: g and u [128, N] fp32 take 2N columns and the "
            f"output [128, {d}] {d}: {tmem_cols} of {mma.TMEM_COLUMNS} at N = {bn} "
            f"({'fits' if tmem_cols <= mma.TMEM_COLUMNS else 'does NOT fit'}); the largest N is {tmem_max_n}. "
            "Tensor Memory, not the register file, bounds N from above."
        )
    return regs, max_n, up_break


def _n_feed_prose(s: Step, p: _Ffn, up_ratio: float, up_break: float, dn_ratio: float, up_n: int) -> None:
    """The up- and down-projections as attention's two GEMMs, fed on this GPU's MMA path."""
    d, bn, arch, wm = p.d, p.bn, p.arch, p.wm
    if arch == "hopper":
        s.say(
            f"The up-projections z_h Wg_h and z_h Wu_h are attention's S = Q K^T with K = d_h: the z tile is wgmma's A, "
            f"re-read from shared memory by every instruction, the weight chunk [d_h, N] is B. The feed bound holds "
            f"unchanged: 0.5 N >= 16 + 0.25 N, N >= {up_break:.0f}; at N = {up_n} compute / feed = "
            f"{up_ratio:.2f}."
        )
        s.say(
            f"The down-projection a Wd_h is P V: a = silu(g) * u is made in registers and can feed wgmma from there "
            f"(RS), ratio {dn_ratio:.2f} at N = d_h = {d}."
        )
    elif arch == "ampere":
        s.say(
            f"On Ampere the 4 warps of a {wm}-row block split the rows and each reads the whole weight chunk "
            f"[d_h, {bn}] through ldmatrix, plus its rows of z: compute / feed = {up_ratio:.2f} (rows per warp / 16 "
            f"once z stays in registers). mma.sync takes a = silu(g) * u from registers for the down-projection: "
            f"ratio {dn_ratio:.2f}."
        )
    else:
        s.say(
            f"On Blackwell one thread issues tcgen05.mma m{mma.TCGEN05_M}nNk16: 0.5 N cycles of compute against 32 + "
            f"0.25 N of shared memory, N >= {up_break:.0f}; at N = {bn}: {up_ratio:.2f}. The down-projection "
            f"can take a from Tensor Memory: {dn_ratio:.2f}."
        )


def _m_bound(r: Report, p: _Ffn) -> int:
    T, H, d, inter, bm, dt, e, g = p.T, p.H, p.d, p.inter, p.bm, p.dt, p.e, p.g
    # 4b. M: token rows per block, weights from L2.
    w_bytes_head = 3 * d * inter * e
    w_bytes = H * w_bytes_head
    blocks_per_head = cdiv(T, bm)
    per_block_intensity = 6 * bm * d * inter / w_bytes_head
    hit = roofline.ideal_hit_rate(blocks_per_head) if blocks_per_head > 1 else 0.0
    reuse = roofline.l2_reuse(per_block_intensity, hit, g, dt)
    s = r.step(
        "m_bound",
        "M carries over: token rows per block, and L2 decides",
        block_m=bm,
        weight_bytes_per_head=w_bytes_head,
        weight_bytes=w_bytes,
        weights_fit_l2=w_bytes <= g.l2_bytes,
        intensity_per_weight_byte=per_block_intensity,
        balance=reuse.balance,
        blocks_per_head=blocks_per_head,
        ideal_hit_rate=hit,
        needed_hit_rate=reuse.needed_hit_rate,
        hbm_intensity=reuse.hbm_intensity,
        bound=reuse.bound,
    )
    s.say(
        f"A block of M = {bm} token rows does 6 x M x d_h x I FLOPs on the {fmt_bytes(w_bytes_head)} of its head's "
        f"three weights: {per_block_intensity:.0f} FLOP per weight byte, M again (N and d_h cancel). Against a balance "
        f"of {reuse.balance:.0f}, M = {bm} needs an L2 hit rate of {pct(reuse.needed_hit_rate)} if every byte came from "
        f"HBM."
    )
    s.say(
        f"All {blocks_per_head} token blocks of a head read the same weights, and all heads' weights together are "
        f"{fmt_bytes(w_bytes)} against {fmt_bytes(g.l2_bytes)} of L2 ({'fits' if w_bytes <= g.l2_bytes else 'does NOT fit'}). "
        f"If only the first read misses, the hit rate is {pct(hit)} and HBM sees {fmt_intensity(reuse.hbm_intensity)} FLOP/B: "
        f"{reuse.bound}-bound. Unlike attention's KV, the weights are the same for every sequence, so the reuse does "
        f"not depend on the sequence length."
    )
    return w_bytes


def _prediction(
    r: Report, p: _Ffn, fl: int, rf_unf: roofline.Roofline, fus_bytes: int, saved: int
) -> tuple[roofline.Roofline, dict[str, int]]:
    T, D, H, d, inter, dt, e, g, peak, inter_bytes = p.T, p.D, p.H, p.d, p.inter, p.dt, p.e, p.g, p.peak, p.inter_bytes
    # 5. Predicted time and memory.
    rf_fwd = roofline.time(g, fl, fus_bytes, dt)
    bwd = {m: mhffn_backward_flops(T, H, d, inter, m) for m in BACKWARD_MODES}
    bwd_bytes = mhffn_backward_bytes(T, H, d, inter, dt)
    rf_bwd = {m: roofline.time(g, bwd[m], bwd_bytes, dt) for m in ("split", "atomic")}
    rf_unf_bwd = roofline.time(g, bwd["useful"], mhffn_unfused_backward_bytes(T, H, d, inter, dt), dt)
    dense_fl = dense_swiglu_flops(T, D, inter)
    rf_dense = roofline.time(
        g,
        dense_fl,
        traffic.gemm_bytes(T, 2 * inter, D, dt) + traffic.gemm_bytes(T, D, inter, dt) + 3 * T * inter * e,
        dt,
    )
    # beyond inputs and weights: y and dz, the weight gradients and one fp32 copy of them (the dW kernel's
    # accumulators; one partial per token split when it splits)
    fused_train_extra = 2 * T * H * d * e + 3 * H * d * inter * (e + 4)
    unfused_train_extra = T * H * d * e + saved + 2 * inter_bytes  # y, the saved activations, the backward's dg, du, dz
    fused_step = rf_fwd.time_s + min(rf_bwd["split"].time_s, rf_bwd["atomic"].time_s)
    unfused_step = rf_unf.time_s + rf_unf_bwd.time_s
    s = r.step(
        "prediction",
        "Predicted time and memory (roofline)",
        fused_forward_s=rf_fwd.time_s,
        unfused_forward_s=rf_unf.time_s,
        forward_speedup_bound=rf_unf.time_s / rf_fwd.time_s,
        fused_backward_s={m: v.time_s for m, v in rf_bwd.items()},
        unfused_backward_s=rf_unf_bwd.time_s,
        training_step_speedup_bound=unfused_step / fused_step,
        dense_forward_s=rf_dense.time_s,
        backward_flops=bwd,
        fused_training_extra_bytes=fused_train_extra,
        unfused_training_extra_bytes=unfused_train_extra,
        memory_ratio=unfused_train_extra / fused_train_extra,
    )
    s.say(
        f"Forward: fused {fmt_time(rf_fwd.time_s)} ({rf_fwd.bound}-bound at {peak / 1e12:.0f} TFLOP/s) vs unfused "
        f"{fmt_time(rf_unf.time_s)} ({rf_unf.bound}-bound): at most {rf_unf.time_s / rf_fwd.time_s:.2f}x. The dense "
        f"SwiGLU of equal FLOPs has the same floor, {fmt_time(rf_dense.time_s)}."
    )
    s.say(
        f"Backward: the unfused layer does 6 GEMM units ({fmt_flops(bwd['useful'])}); recomputing costs more: 11 units "
        f"with a separate dz kernel ({fmt_time(rf_bwd['split'].time_s)}), 8 with dz by fp32 atomics "
        f"({fmt_time(rf_bwd['atomic'].time_s)}), vs unfused {fmt_time(rf_unf_bwd.time_s)} ({rf_unf_bwd.bound}-bound). "
        f"A training step: at most {unfused_step / fused_step:.2f}x."
    )
    s.say(
        f"Training memory beyond inputs and weights: fused about {fmt_bytes(fused_train_extra)} (y, dz, the weight "
        f"gradients and their fp32 accumulators), unfused about {fmt_bytes(unfused_train_extra)} (y, the saved "
        f"activations, the backward's dg and du): "
        f"{unfused_train_extra / fused_train_extra:.1f}x less."
    )
    ffn_p = {"tokens": T, "heads": H, "head_dim": d, "intermediate": inter, "dtype": dt}
    prediction(
        s, "ffn", ffn_p, g.key, what="the FlashFFN forward (its GEMMs at the grouped GEMM's best configs)",
        floor_s=rf_fwd.time_s,
    )  # fmt: skip
    prediction(
        s, "ffn", {**ffn_p, "backward": "split"}, g.key,
        what="a training step, forward + the split backward (its 14 GEMM units)",
        floor_s=rf_fwd.time_s + rf_bwd["split"].time_s, prefix="step_",
    )  # fmt: skip
    return rf_fwd, bwd


def _small_speedup(r: Report, p: _Ffn, fl: int, rf_unf: roofline.Roofline, bwd: dict[str, int]) -> None:
    D, d, inter, peak = p.D, p.d, p.inter, p.peak
    # 6. Why is the speedup so small?
    s = r.step(
        "small_speedup",
        "Why the speedup is small",
        unfused_attainable_tflops=rf_unf.attainable_flops / 1e12,
        peak_tflops=peak / 1e12,
        recompute_flops_ratio=(fl + bwd["split"]) / (fl + bwd["useful"]),
    )
    s.say(
        f"The unfused layer is not slow for lack of FLOPs but for bytes: at {fmt_intensity(rf_unf.intensity)} FLOP/B it can reach "
        f"{rf_unf.attainable_flops / 1e12:.0f} TFLOP/s. Fusion removes the bytes, so the gain is the distance from there "
        f"to what the fused kernel's Tensor Cores really deliver, and that is far from {peak / 1e12:.0f}: the "
        f"up-projections have K = d_h = {d} ({d // 16} k16 steps per chunk), the SiLU sits between the GEMMs on the "
        f"same warps, and M and N are held down by the register budget above."
    )
    s.say(
        f"Against the dense SwiGLU of equal FLOPs the fused kernel only removes a cost the split created: cuBLAS runs "
        f"the dense GEMMs with K = {D} and {inter}, long main loops near peak. Training adds the recompute: "
        f"{(fl + bwd['split']) / (fl + bwd['useful']):.2f}x the FLOPs of a stored-activation step with a separate dz "
        f"kernel. The benchmark rows (benchmarks/results/h200/ffn.json) carry the measured answer."
    )


def _advice(
    r: Report, p: _Ffn, rf_fwd: roofline.Roofline, feed_break: float, regs: dict[str, float], max_n: int, w_bytes: int
) -> None:
    bn, g, arch, wm, regs_lim = p.bn, p.g, p.arch, p.wm, p.regs_lim
    if not rf_fwd.bound == "compute":
        r.advice.append("The fused forward is memory-bound here: more token rows per block (M) or more tokens.")
    if bn < feed_break:
        r.advice.append(f"block_n = {bn} is below the shared-memory feed's break-even N = {feed_break:g}: raise it.")
    if arch != "blackwell" and regs["total"] > regs_lim:
        r.advice.append(f"block_n = {bn} does not fit the register budget at M = {wm}: at most {max_n}.")
    if w_bytes > g.l2_bytes:
        r.advice.append("The weights do not fit in L2: order the grid head-major so one head's blocks run together.")
    r.advice.append(
        "Training: the recompute backward trades FLOPs for memory; if memory allows, storing a alone removes one "
        "recomputed GEMM per chunk."
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tokens", type=cli_int, default=DEFAULTS["tokens"], help="tokens T (default 16384)")
    p.add_argument("--d-model", type=cli_int, default=DEFAULTS["d_model"], help="model width (default 2048)")
    p.add_argument("--heads", type=cli_int, default=DEFAULTS["heads"], help="heads H; d_h = d_model / H (default 16)")
    p.add_argument("--intermediate", type=cli_int, default=DEFAULTS["intermediate"], help="per-head I (default 512)")
    p.add_argument("--block-m", type=cli_int, default=DEFAULTS["block_m"], help="token rows per block (default 128)")
    p.add_argument("--block-n", type=cli_int, default=DEFAULTS["block_n"], help="intermediate chunk N (default 64)")
    p.add_argument("--dtype", default="bf16", help="bf16 or fp16 (default bf16)")
    p.add_argument("--gpu", default=DEFAULTS["gpu"], help=f"registry name (default {_gpus.DEFAULT_GPU})")


def from_args(a: argparse.Namespace) -> Report:
    return explain(
        tokens=a.tokens,
        d_model=a.d_model,
        heads=a.heads,
        intermediate=a.intermediate,
        block_m=a.block_m,
        block_n=a.block_n,
        dtype=a.dtype,
        gpu=a.gpu,
    )


__all__ = [
    "DEFAULTS",
    "add_arguments",
    "dense_swiglu_flops",
    "explain",
    "ffn_register_budget",
    "from_args",
    "mhffn_backward_bytes",
    "mhffn_backward_flops",
    "mhffn_unfused_backward_bytes",
    "mhffn_unfused_saved_bytes",
]
