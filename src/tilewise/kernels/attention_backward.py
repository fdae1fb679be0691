"""FlashAttention backward in Triton: dQ, dK, dV in tiles, memory linear in the sequence.

    dq, dk, dv = attention_backward(d_out, q, k, v, out, lse, causal=True)

The equations (`tilewise.model.attention_backward` has them with their FLOP and byte counts) rebuild
P = exp(scale Q K^T - lse) tile by tile from the forward's log-sum-exp (natural log, fp32, as
`tilewise.kernels.flash_attention.attention` returns it), so no [S, S] buffer ever exists:

* a preprocessing pass writes D = rowsum(dO o O) - dlse, one fp32 per query row;
* the dK/dV kernel runs one program per key block of one K/V head: K and V stay on chip for the
  whole loop, the query blocks of every query head of the GQA group stream past (so dK and dV are
  summed over the group inside one program, with no atomics across heads), and dK, dV accumulate
  in fp32 registers. Causal: query blocks that see no key of the block are never visited, and only
  the blocks the diagonal crosses pay for the mask (bottom-right aligned: query i sees keys
  0 .. i + Sk - Sq, the forward's convention);
* dQ is computed by a second kernel, one program per query block that walks the key blocks and recomputes
  S and dP (`dq="separate"`, 7 GEMMs per pair, no atomics, bitwise repeatable: the default, measured faster on
  the H200 than the other mode at every head dim, `tilewise.model.attention_backward.SHIPPED` has the figures), or
  is added as [BLOCK_M, d] fp32 partials with atomics from the dK/dV kernel (`dq="atomic"`, 5 GEMMs per pair,
  bound by the L2's atomic throughput, ~0.9 TB/s). `deterministic=True`, or
  `torch.use_deterministic_algorithms(True)`, always takes the second kernel.

fp16 / bf16 (and fp32, slow) inputs with fp32 accumulation; head dims 16 .. 256; any strides with a
unit last one (others are copied).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources

from tilewise.errors import InputError, require
from tilewise.kernels.flash_attention import check_attention
from tilewise.kernels.utils import gpu_key, interpreting
from tilewise.model import attention_backward as model
from tilewise.util import cdiv

LOG2E = 1.4426950408889634
_LOG2E = tl.constexpr(LOG2E)  # a jit function reads only constexpr globals
_DTYPE_KEY = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}


# ------------------------------------------------------------------------------ helpers


def _unit_last(t: torch.Tensor) -> torch.Tensor:
    """The kernels read rows with unit stride along head_dim; any other layout is copied once."""
    return t if t.stride(-1) == 1 else t.contiguous()


# ------------------------------------------------------------------------ config choice


@dataclass(frozen=True)
class BackwardConfig:
    block_m: int  # query rows per step of the dK/dV kernel
    block_n: int  # keys per dK/dV program
    num_warps: int
    num_stages: int
    dq_block_m: int  # the separate dQ kernel: query rows per program
    dq_block_n: int  # ... keys per step
    dq_warps: int
    dq_stages: int
    dq: str = "atomic"  # "atomic" | "separate"
    reason: str = ""


# The tiles and the dQ mode come from one table, `tilewise.model.attention_backward.SHIPPED` / `DQ_MODE` (the
# measurement that chose them is written above it; the advisor and `tilewise explain attention --backward` read the
# same table), checked here against `tilewise.model.attention_backward.tile_budget` (registers per thread and shared
# memory of the dK/dV program) and shrunk for fp32. The interpreter takes small tiles (16 x 32) so that small test
# shapes still cross several blocks and edges.
_INTERPRETER = (16, 32, 4, 1, 32, 16, 4, 1)


def backward_config(
    head_dim: int, dtype: torch.dtype, *, deterministic: bool = False, gpu: str = "h200", dq: str | None = None
) -> BackwardConfig:
    """The tiles `attention_backward` launches for one head dim and dtype, with the reason in numbers; `dq` overrides
    the dQ mode (`tilewise.model.attention_backward.DQ_MODE`; `deterministic` takes "separate")."""
    mode = "separate" if deterministic else (dq or model.DQ_MODE)
    return _backward_config_cached(int(head_dim), dtype, bool(deterministic), interpreting(), gpu, mode)


@functools.lru_cache(maxsize=256)
def _backward_config_cached(
    head_dim: int, dtype: torch.dtype, deterministic: bool, interpreting: bool, gpu: str, mode: str = "separate"
) -> BackwardConfig:
    dq = "separate" if deterministic else mode
    if interpreting:
        return BackwardConfig(*_INTERPRETER, dq=dq, reason="interpreter: 16 x 32 tiles")
    t = model.shipped_config(head_dim, dq=dq)
    bm, bn, w, st = t["block_m"], t["block_n"], t["num_warps"], t["num_stages"]
    qm, qn, qw, qs = t["dq_block_m"], t["dq_block_n"], t["dq_warps"], t["dq_stages"]
    dt = _DTYPE_KEY[dtype]
    # fp32 operands are twice as wide: halve the streamed query block until the tile fits shared memory
    while True:
        b = model.tile_budget(head_dim, bm, bn, w, st, dt, gpu)
        if b["smem"]["fits"] or bm <= 16:
            break
        bm, qm = bm // 2, max(16, qm // 2)
    if dt == "fp32":  # the dQ kernel's K/V stages are 4-byte too: one stage (d = 256: 64 KB Q, dO + 128 KB K, V)
        qs = 1
    r, sm = b["registers"], b["smem"]
    reason = (
        f"tilewise.model.attention_backward.SHIPPED for d={head_dim}: dK/dV program BLOCK_N={bn} keys x "
        f"BLOCK_M={bm} query rows, warps={w} stages={st}: "
        f"registers dK+dV {r['dk_dv']:.0f} + S,dP {r['s_dp']:.0f} + P,dS {r['p_ds']:.0f} + 16 = {r['total']:.0f} of "
        f"{r['limit']}; shared memory {sm['total_bytes'] // 1024} KB of {sm['limit_bytes'] // 1024} KB; "
        + (
            "dQ atomically in fp32"
            if dq == "atomic"
            else f"dQ by a second kernel, {qm} x {qn}, {qw} warps, {qs} stages"
        )
    )
    return BackwardConfig(bm, bn, w, st, qm, qn, qw, qs, dq=dq, reason=reason)


# ------------------------------------------------------------------------------ kernels


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _bwd_preprocess_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # pointers
    O,
    DO,
    DLSE,
    DELTA,
    # sizes
    num_heads,
    seq_q,
    # strides
    stride_ob,
    stride_oh,
    stride_om,
    stride_dob,
    stride_doh,
    stride_dom,
    # meta-parameters
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    HAS_DLSE: tl.constexpr,
):
    """D = rowsum(dO o O) - dlse per query row (fp32): dS = P (dP - D) then holds the lse's gradient too."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // num_heads
    h = bh % num_heads
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < seq_q
    o = tl.load(
        O + b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :],
        mask=row_ok[:, None], other=0.0,
    )  # fmt: skip
    do = tl.load(
        DO + b.to(tl.int64) * stride_dob + h.to(tl.int64) * stride_doh + offs_m[:, None] * stride_dom
        + offs_d[None, :],
        mask=row_ok[:, None], other=0.0,
    )  # fmt: skip
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), 1)
    if HAS_DLSE:
        delta -= tl.load(DLSE + bh.to(tl.int64) * seq_q + offs_m, mask=row_ok, other=0.0)
    tl.store(DELTA + bh.to(tl.int64) * seq_q + offs_m, delta, mask=row_ok)


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _dkdv_tile_loop(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    dk,
    dv,
    k,
    v,
    q_ptrs,
    do_ptrs,
    dq_ptrs,
    lse_ptr,
    delta_ptr,
    stride_qm,
    stride_dom,
    stride_dqm,
    offs_n,
    offs_m0,
    lo,
    hi,
    seq_q,
    seq_k,
    causal_shift,
    qk_scale,
    sm_scale,
    BLOCK_M: tl.constexpr,
    MASKED: tl.constexpr,
    CAUSAL: tl.constexpr,
    ATOMIC_DQ: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """dV += P^T dO, dK += dS^T Q over the query blocks [lo, hi) (and dQ += dS K atomically).
    MASKED steps check the rows past Sq, the keys past Sk and the causal diagonal."""
    for start_m in tl.range(lo, hi, BLOCK_M):
        offs_m = start_m + offs_m0
        if MASKED:
            row_ok = offs_m < seq_q
            q = tl.load(q_ptrs + start_m * stride_qm, mask=row_ok[:, None], other=0.0)
            do = tl.load(do_ptrs + start_m * stride_dom, mask=row_ok[:, None], other=0.0)
            lse = tl.load(lse_ptr + offs_m, mask=row_ok, other=0.0)
            delta = tl.load(delta_ptr + offs_m, mask=row_ok, other=0.0)
        else:
            q = tl.load(q_ptrs + start_m * stride_qm)
            do = tl.load(do_ptrs + start_m * stride_dom)
            lse = tl.load(lse_ptr + offs_m)
            delta = tl.load(delta_ptr + offs_m)
        s_t = tl.dot(k, tl.trans(q), input_precision=DOT_PRECISION)  # [BN, BM] fp32: S^T recomputed
        p_t = tl.math.exp2(s_t * qk_scale - (lse * _LOG2E)[None, :])
        if MASKED:
            valid = row_ok[None, :] & (offs_n < seq_k)[:, None]
            if CAUSAL:
                valid = valid & (offs_n[:, None] <= offs_m[None, :] + causal_shift)
            p_t = tl.where(valid, p_t, 0.0)  # also the rows that saw no key (lse -inf, exp2 inf)
        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=DOT_PRECISION)
        dp_t = tl.dot(v, tl.trans(do), input_precision=DOT_PRECISION)  # [BN, BM]
        ds_t = (p_t * (dp_t - delta[None, :])).to(q.dtype)
        dk = tl.dot(ds_t, q, dk, input_precision=DOT_PRECISION)
        if ATOMIC_DQ:
            dq = tl.dot(tl.trans(ds_t), k, input_precision=DOT_PRECISION) * sm_scale  # [BM, D] fp32
            if MASKED:
                tl.atomic_add(dq_ptrs + start_m * stride_dqm, dq, mask=row_ok[:, None], sem="relaxed")
            else:
                tl.atomic_add(dq_ptrs + start_m * stride_dqm, dq, sem="relaxed")
    return dk, dv


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _attn_bwd_dkdv_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # pointers
    Q,
    K,
    V,
    DO,
    LSE,
    DELTA,
    DQ,
    DK,
    DV,
    # sizes
    num_heads,
    num_kv_heads,
    seq_q,
    seq_k,
    qk_scale,
    sm_scale,
    # strides (dK and dV share one contiguous layout)
    stride_qb,
    stride_qh,
    stride_qm,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_vb,
    stride_vh,
    stride_vn,
    stride_dob,
    stride_doh,
    stride_dom,
    stride_dqb,
    stride_dqh,
    stride_dqm,
    stride_dkb,
    stride_dkh,
    stride_dkn,
    # meta-parameters
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    ATOMIC_DQ: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    tl.static_assert(BLOCK_M >= 16 and BLOCK_N >= 16)
    pid_n = tl.program_id(0)
    bhk = tl.program_id(1)
    b = bhk // num_kv_heads
    hk = bhk % num_kv_heads
    group = num_heads // num_kv_heads

    n0 = pid_n * BLOCK_N
    offs_n = n0 + tl.arange(0, BLOCK_N)
    offs_m0 = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    key_ok = offs_n < seq_k
    k_base = K + b.to(tl.int64) * stride_kb + hk.to(tl.int64) * stride_kh
    v_base = V + b.to(tl.int64) * stride_vb + hk.to(tl.int64) * stride_vh
    k = tl.load(k_base + offs_n[:, None] * stride_kn + offs_d[None, :], mask=key_ok[:, None], other=0.0)
    v = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :], mask=key_ok[:, None], other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)

    # the query blocks this key block meets: [lo, diag) masked (the diagonal), [diag, full) unmasked,
    # [max(diag, full), end) masked again (rows past Sq); a key block past Sk is masked throughout
    causal_shift = seq_k - seq_q  # query i sees keys j <= i + causal_shift
    q_end = tl.cdiv(seq_q, BLOCK_M) * BLOCK_M
    full = (seq_q // BLOCK_M) * BLOCK_M
    lo = 0
    diag = 0
    if CAUSAL:
        lo = tl.minimum((tl.maximum(n0 - causal_shift, 0) // BLOCK_M) * BLOCK_M, q_end)  # first row seeing key n0
        last = tl.maximum(n0 + BLOCK_N - 1 - causal_shift, 0)  # rows from here on see every key of the block
        diag = tl.minimum(tl.maximum(tl.cdiv(last, BLOCK_M) * BLOCK_M, lo), q_end)
    diag = tl.where(n0 + BLOCK_N > seq_k, q_end, diag)
    tail = tl.maximum(diag, full)

    for j in range(0, group):
        h = hk * group + j
        bh = b * num_heads + h
        q_ptrs = Q + b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
        q_ptrs = q_ptrs + offs_m0[:, None] * stride_qm + offs_d[None, :]
        do_ptrs = DO + b.to(tl.int64) * stride_dob + h.to(tl.int64) * stride_doh
        do_ptrs = do_ptrs + offs_m0[:, None] * stride_dom + offs_d[None, :]
        dq_ptrs = DQ + b.to(tl.int64) * stride_dqb + h.to(tl.int64) * stride_dqh
        dq_ptrs = dq_ptrs + offs_m0[:, None] * stride_dqm + offs_d[None, :]
        lse_ptr = LSE + bh.to(tl.int64) * seq_q
        delta_ptr = DELTA + bh.to(tl.int64) * seq_q
        dk, dv = _dkdv_tile_loop(
            dk, dv, k, v, q_ptrs, do_ptrs, dq_ptrs, lse_ptr, delta_ptr, stride_qm, stride_dom, stride_dqm,
            offs_n, offs_m0, lo, diag, seq_q, seq_k, causal_shift, qk_scale, sm_scale,
            BLOCK_M, True, CAUSAL, ATOMIC_DQ, DOT_PRECISION,
        )  # fmt: skip
        dk, dv = _dkdv_tile_loop(
            dk, dv, k, v, q_ptrs, do_ptrs, dq_ptrs, lse_ptr, delta_ptr, stride_qm, stride_dom, stride_dqm,
            offs_n, offs_m0, diag, full, seq_q, seq_k, causal_shift, qk_scale, sm_scale,
            BLOCK_M, False, CAUSAL, ATOMIC_DQ, DOT_PRECISION,
        )  # fmt: skip
        dk, dv = _dkdv_tile_loop(
            dk, dv, k, v, q_ptrs, do_ptrs, dq_ptrs, lse_ptr, delta_ptr, stride_qm, stride_dom, stride_dqm,
            offs_n, offs_m0, tail, q_end, seq_q, seq_k, causal_shift, qk_scale, sm_scale,
            BLOCK_M, True, CAUSAL, ATOMIC_DQ, DOT_PRECISION,
        )  # fmt: skip

    out_off = b.to(tl.int64) * stride_dkb + hk.to(tl.int64) * stride_dkh + offs_n[:, None] * stride_dkn
    out_off = out_off + offs_d[None, :]
    tl.store(DK + out_off, (dk * sm_scale).to(DK.dtype.element_ty), mask=key_ok[:, None])
    tl.store(DV + out_off, dv.to(DV.dtype.element_ty), mask=key_ok[:, None])


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _dq_tile_loop(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    dq,
    q,
    do,
    lse2,
    delta,
    k_ptrs,
    v_ptrs,
    stride_kn,
    stride_vn,
    offs_m,
    offs_n0,
    lo,
    hi,
    seq_k,
    causal_shift,
    qk_scale,
    BLOCK_N: tl.constexpr,
    MASKED: tl.constexpr,
    CAUSAL: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    """dQ += dS K over the key blocks [lo, hi), S and dP recomputed; MASKED steps check Sk and the diagonal."""
    for start_n in tl.range(lo, hi, BLOCK_N):
        offs_n = start_n + offs_n0
        if MASKED:
            key_ok = offs_n < seq_k
            k = tl.load(k_ptrs + start_n * stride_kn, mask=key_ok[:, None], other=0.0)
            v = tl.load(v_ptrs + start_n * stride_vn, mask=key_ok[:, None], other=0.0)
        else:
            k = tl.load(k_ptrs + start_n * stride_kn)
            v = tl.load(v_ptrs + start_n * stride_vn)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)  # [BM, BN]
        p = tl.math.exp2(s * qk_scale - lse2[:, None])
        if MASKED:
            valid = key_ok[None, :]
            if CAUSAL:
                valid = valid & (offs_n[None, :] <= offs_m[:, None] + causal_shift)
            p = tl.where(valid, p, 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision=DOT_PRECISION)
        ds = (p * (dp - delta[:, None])).to(k.dtype)
        dq = tl.dot(ds, k, dq, input_precision=DOT_PRECISION)
    return dq


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _attn_bwd_dq_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # pointers
    Q,
    K,
    V,
    DO,
    LSE,
    DELTA,
    DQ,
    # sizes
    num_heads,
    num_kv_heads,
    seq_q,
    seq_k,
    qk_scale,
    sm_scale,
    # strides (dQ contiguous)
    stride_qb,
    stride_qh,
    stride_qm,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_vb,
    stride_vh,
    stride_vn,
    stride_dob,
    stride_doh,
    stride_dom,
    stride_dqb,
    stride_dqh,
    stride_dqm,
    # meta-parameters
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    tl.static_assert(BLOCK_M >= 16 and BLOCK_N >= 16)
    num_m = tl.cdiv(seq_q, BLOCK_M)
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = num_m - 1 - pid_m  # the longest rows start first: a shorter tail
    bh = tl.program_id(1)
    b = bh // num_heads
    h = bh % num_heads
    hk = h // (num_heads // num_kv_heads)

    m0 = pid_m * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < seq_q
    q_off = b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :]
    q = tl.load(Q + q_off, mask=row_ok[:, None], other=0.0)
    do_off = b.to(tl.int64) * stride_dob + h.to(tl.int64) * stride_doh + offs_m[:, None] * stride_dom
    do = tl.load(DO + do_off + offs_d[None, :], mask=row_ok[:, None], other=0.0)
    lse = tl.load(LSE + bh.to(tl.int64) * seq_q + offs_m, mask=row_ok, other=0.0)
    lse2 = tl.where(lse == float("-inf"), float("inf"), lse * _LOG2E)  # a row with no key: p = 0, not inf
    delta = tl.load(DELTA + bh.to(tl.int64) * seq_q + offs_m, mask=row_ok, other=0.0)
    k_ptrs = K + b.to(tl.int64) * stride_kb + hk.to(tl.int64) * stride_kh
    k_ptrs = k_ptrs + offs_n0[:, None] * stride_kn + offs_d[None, :]
    v_ptrs = V + b.to(tl.int64) * stride_vb + hk.to(tl.int64) * stride_vh
    v_ptrs = v_ptrs + offs_n0[:, None] * stride_vn + offs_d[None, :]
    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    full_end = (seq_k // BLOCK_N) * BLOCK_N
    hi = seq_k
    causal_shift = seq_k - seq_q
    if CAUSAL:
        below = tl.maximum(m0 + causal_shift + 1, 0)  # keys every row of this block sees
        full_end = tl.minimum((below // BLOCK_N) * BLOCK_N, full_end)
        hi = tl.minimum(tl.maximum(m0 + BLOCK_M + causal_shift, 0), seq_k)  # past it: never loaded
    dq = _dq_tile_loop(
        dq, q, do, lse2, delta, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n0, 0, full_end, seq_k,
        causal_shift, qk_scale, BLOCK_N, False, CAUSAL, DOT_PRECISION,
    )  # fmt: skip
    dq = _dq_tile_loop(
        dq, q, do, lse2, delta, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n0, full_end, hi, seq_k,
        causal_shift, qk_scale, BLOCK_N, True, CAUSAL, DOT_PRECISION,
    )  # fmt: skip
    dq_off = b.to(tl.int64) * stride_dqb + h.to(tl.int64) * stride_dqh + offs_m[:, None] * stride_dqm
    tl.store(DQ + dq_off + offs_d[None, :], (dq * sm_scale).to(DQ.dtype.element_ty), mask=row_ok[:, None])


# ---------------------------------------------------------------------------- launcher


def check_attention_backward(
    d_out: torch.Tensor,
    d_lse: torch.Tensor | None,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    scale: float | None,
) -> None:
    """The forward's checks on q, k, v, then out / d_out like q and lse / d_lse like [B, H, Sq] fp32."""
    check_attention(q, k, v, scale)
    B, H, Sq, _ = q.shape
    for name, t in (("out", out), ("d_out", d_out)):
        require(isinstance(t, torch.Tensor), f"{name} must be a torch.Tensor, got {type(t).__name__}")
        require(tuple(t.shape) == tuple(q.shape), f"{name} must have q's shape {list(q.shape)}, got {list(t.shape)}")
        require(t.dtype == q.dtype, f"{name} must have q's dtype {q.dtype}, got {t.dtype}")
        require(t.device == q.device, f"{name} must be on q's device {q.device}, got {t.device}")
    for name, given in (("lse", lse), ("d_lse", d_lse)):
        if given is None:  # d_lse may be absent (the lse had no gradient); lse may not
            require(name == "d_lse", f"{name} must be a torch.Tensor, got NoneType")
            continue
        t = given
        require(isinstance(t, torch.Tensor), f"{name} must be a torch.Tensor, got {type(t).__name__}")
        require(tuple(t.shape) == (B, H, Sq), f"{name} must have shape {[B, H, Sq]}, got {list(t.shape)}")
        require(t.dtype == torch.float32, f"{name} must be float32 (the forward's log-sum-exp), got {t.dtype}")
        require(t.device == q.device, f"{name} must be on q's device {q.device}, got {t.device}")


def attention_backward(
    d_out: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    *,
    d_lse: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
    deterministic: bool | None = None,
    config: BackwardConfig | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV of (out, lse) = attention(q, k, v, causal=, scale=) for the gradients d_out (and d_lse).

    q, out, d_out [B, H, Sq, D]; k, v [B, Hkv, Sk, D] (H a multiple of Hkv); lse, d_lse [B, H, Sq] fp32
    (natural log, as the forward returns it). Returns dq [B, H, Sq, D], dk and dv [B, Hkv, Sk, D] in the
    inputs' dtype. `deterministic` (default: torch.are_deterministic_algorithms_enabled()) computes dQ
    without atomics; `config` pins the tiles (benchmark sweeps).
    """
    check_attention_backward(d_out, d_lse, q, k, v, out, lse, scale)
    B, H, Sq, D = q.shape
    Hk, Sk = k.shape[1], k.shape[2]
    if deterministic is None:
        deterministic = torch.are_deterministic_algorithms_enabled()
    dq = torch.empty((B, H, Sq, D), device=q.device, dtype=q.dtype)
    dk = torch.empty((B, Hk, Sk, D), device=q.device, dtype=q.dtype)
    dv = torch.empty((B, Hk, Sk, D), device=q.device, dtype=q.dtype)
    if B == 0 or H == 0 or Sq == 0:
        return dq, dk.zero_(), dv.zero_()
    cfg = config or backward_config(D, q.dtype, deterministic=deterministic, gpu=gpu_key(q.device))
    q, k, v, out, d_out = (_unit_last(t) for t in (q, k, v, out, d_out))
    lse = lse.contiguous()
    sm_scale = (1.0 / math.sqrt(D)) if scale is None else float(scale)
    precision = "ieee" if q.dtype == torch.float32 else "tf32"

    delta = torch.empty((B, H, Sq), device=q.device, dtype=torch.float32)
    pre_m = 64 if D <= 128 else 32
    _bwd_preprocess_kernel[(cdiv(Sq, pre_m), B * H)](
        out, d_out, d_lse.contiguous() if d_lse is not None else delta, delta, H, Sq,
        out.stride(0), out.stride(1), out.stride(2), d_out.stride(0), d_out.stride(1), d_out.stride(2),
        HEAD_DIM=D, BLOCK_M=pre_m, HAS_DLSE=d_lse is not None,
    )  # fmt: skip
    atomic = cfg.dq == "atomic"
    dq_acc = torch.zeros((B, H, Sq, D), device=q.device, dtype=torch.float32) if atomic else dq
    common = (
        H, Hk, Sq, Sk, sm_scale * LOG2E, sm_scale,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2), d_out.stride(0), d_out.stride(1), d_out.stride(2),
        dq_acc.stride(0), dq_acc.stride(1), dq_acc.stride(2),
    )  # fmt: skip
    try:
        _attn_bwd_dkdv_kernel[(cdiv(Sk, cfg.block_n), B * Hk)](
            q, k, v, d_out, lse, delta, dq_acc, dk, dv, *common, dk.stride(0), dk.stride(1), dk.stride(2),
            HEAD_DIM=D, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, CAUSAL=bool(causal), ATOMIC_DQ=atomic,
            DOT_PRECISION=precision, num_warps=cfg.num_warps, num_stages=cfg.num_stages,
        )  # fmt: skip
        if not atomic:
            _attn_bwd_dq_kernel[(cdiv(Sq, cfg.dq_block_m), B * H)](
                q, k, v, d_out, lse, delta, dq, *common,
                HEAD_DIM=D, BLOCK_M=cfg.dq_block_m, BLOCK_N=cfg.dq_block_n, CAUSAL=bool(causal),
                DOT_PRECISION=precision, num_warps=cfg.dq_warps, num_stages=cfg.dq_stages,
            )  # fmt: skip
    except OutOfResources as e:
        raise InputError(
            f"attention backward: the tiles for head_dim {D} in {q.dtype} need more on-chip memory than the GPU "
            f"has ({e}); use float16 or bfloat16, or pass a smaller config"
        ) from None
    if atomic:
        dq.copy_(dq_acc)
    return dq, dk, dv


__all__ = ["BackwardConfig", "attention_backward", "backward_config", "check_attention_backward"]
