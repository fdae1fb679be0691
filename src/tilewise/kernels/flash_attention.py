"""FlashAttention forward in Triton: online softmax, S = Q K^T never leaves registers.

    out, lse = attention(q, k, v, causal=True)     # q [B, H, S, D], k/v [B, Hkv, Sk, D]

The tile sizes follow from three bounds, and this file follows them:

* S = Q K^T of one (BLOCK_M, BLOCK_N) tile lives in registers, is exponentiated there (P)
  and multiplied into the output accumulator O (BLOCK_M x D, fp32) without a round trip
  through shared or global memory. Only Q (once), K and V (streamed) and O (once) move.
* N (BLOCK_N) is bounded below by the shared-memory feed of wgmma (0.5 N >= 16 + 0.25 N,
  N >= 64) and above by registers (S costs N/2 fp32 registers per thread of a warpgroup,
  O another D/2; 255 is the cap). The default tile is the advisor's top-1 (`forward_config`, with the
  numbers in its reason).
* M (BLOCK_M) sets the HBM intensity (each K/V byte buys BLOCK_M FLOPs); the programs of
  one head run next to each other (program id 0 walks the query tiles of one head), so
  K/V is re-read from L2, not HBM.
* Causal masking is split into two loops: key tiles entirely below the diagonal run
  without any mask; only the one or two tiles that the diagonal crosses are masked, and
  tiles entirely above it are never loaded. The causal mask is aligned at the bottom
  right (query i sees keys 0 .. i + Sk - Sq), FlashAttention's convention and the one
  `tilewise.model.traffic.causal_pairs` counts; for Sq == Sk it is SDPA's `is_causal`.
* GQA: query head h reads K/V head h // (H // Hkv), as SDPA with `enable_gqa=True`.

Returns the output (q's dtype, [B, H, Sq, D]) and the log-sum-exp of each query row in
natural log (fp32, [B, H, Sq]); rows that see no key get out 0 and lse -inf.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources

from tilewise.advise import advise
from tilewise.errors import InputError, require
from tilewise.kernels.attention_gluon import gluon_attention, gluon_failed, use_gluon
from tilewise.kernels.utils import Launcher, PlanCache, flat_rows, gpu_key, interpreting, long_kernel
from tilewise.model.tensorcore import attention_tile_budget
from tilewise.util import cdiv

try:  # host-side TMA descriptors (triton >= 3.4); the interpreter understands them too
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - older triton
    TensorDescriptor = None

LOG2E = 1.4426950408889634
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


# ------------------------------------------------------------------------------ helpers


def _dtype_key(dtype: torch.dtype) -> str:
    return {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]


# ------------------------------------------------------------------------ config choice


@dataclass(frozen=True)
class ForwardConfig:
    block_m: int
    block_n: int
    num_warps: int
    num_stages: int
    use_desc: bool = True  # TMA descriptors for the unmasked K/V loads
    warp_specialize: bool = False  # triton's automatic producer/consumer split of the unmasked loop
    reason: str = ""


def _budget(head_dim: int, block_m: int, block_n: int, num_warps: int, stages: int, dtype: str) -> dict[str, Any]:
    """Registers per thread and shared memory of one tile, from `tilewise.model.tensorcore`.

    Triton gives each warpgroup (4 warps) BLOCK_M / (num_warps / 4) rows of the tile; with 8 warps
    that is two consumer warpgroups of 64 rows sharing every K/V stage, FA3's arrangement.
    """
    groups = max(1, num_warps // 4)
    return attention_tile_budget(
        head_dim, block_n, block_m=block_m // groups, dtype=dtype, stages=stages, gpu="h100-sxm", consumers=groups
    )


# The default tile is the advisor's top-1 (tilewise.advise: every block_m x block_n x warps x stages of the
# kernel's space that fits the GPU, ranked by tilewise.model.predict, calibrated on the H200 sweep in
# tests/data/sweeps/h200). The hand list it replaces, and the rows that ordered it, are in
# tests/data/tuning/attention.md. The sweep timed that list beside the space ("hand" rows; H200, bf16, 30 problems,
# 2026-12-01): the advisor's top-1 ran at a median 0.99x the hand list's speed (geometric mean 0.977x, from 0.68x at
# B1 H24 S1000 D64 to 1.17x at B1 H8 S8192 D256 causal), within 5% of the best config on 26 of the 30
# problems against the hand list's 28 (tests/test_attention_advised_default.py recomputes both from the fixture).
#
# Where the advisor has nothing to say, a rule (no table):
# * fp32 (the advisor models 16-bit attention only): the 16-bit top-1 for the same problem, shrunk by `_smaller`
#   until its 4-byte Q tile and K/V stages fit shared memory, keeping at least two stages where a tile does;
# * no configuration of the space fits the GPU (the advisor refuses): 64 x 64 with one warpgroup and two stages
#   (N = 64 is the wgmma shared-memory feed's break-even, 0.5 N >= 16 + 0.25 N), shrunk the same way;
# * the interpreter: 32 x 32 tiles (small test shapes stay cheap).
_Tile = tuple[int, int, int, int]  # (block_m, block_n, num_warps, num_stages)
_RULE_TILE: _Tile = (64, 64, 4, 2)


def forward_config(
    head_dim: int,
    causal: bool,
    dtype: torch.dtype,
    seq_q: int,
    *,
    batch: int = 1,
    heads: int = 1,
    kv_heads: int | None = None,
    seq_k: int | None = None,
    gpu: str = "h200",
) -> ForwardConfig:
    """The tiles `attention` launches for q [batch, heads, seq_q, head_dim] against k/v [batch, kv_heads, seq_k,
    head_dim] on `gpu` (a registry key) when no config is given: the plan, with its reason in numbers. Cached per
    problem: the advisor ranks ~20 configs, ~1.5 ms of Python."""
    return _forward_config_cached(
        int(head_dim), bool(causal), dtype, interpreting(), int(batch), int(heads),
        int(kv_heads if kv_heads is not None else heads), max(1, int(seq_q)),
        max(1, int(seq_k if seq_k is not None else seq_q)), gpu,
    )  # fmt: skip


def _smaller(bm: int, bn: int, w: int, st: int) -> Iterator[_Tile]:
    """Tiles below a starting tile, for rows the advisor does not model (fp32): fewer stages first (each K/V
    stage is 2 x BLOCK_N x D elements of shared memory), then half the key tile, then half the query tile."""
    while True:
        if st > 1:
            st -= 1
        elif bn > 16:
            bn, st = bn // 2, 2
        elif bm > 16:
            bm, w, st = bm // 2, 4, 2
        else:
            return
        yield bm, bn, (4 if bm <= 64 else w), st


def _advised(
    batch: int, heads: int, kv_heads: int, seq_q: int, seq_k: int, head_dim: int, causal: bool, dtype: str, gpu: str
) -> tuple[_Tile, str] | None:
    """The advisor's top-1 (tilewise.advise) as (tile, reason), or None where it refuses (no config fits)."""
    p = {"batch": batch, "heads": heads, "kv_heads": kv_heads, "seq_q": seq_q, "seq_k": seq_k,
         "head_dim": head_dim, "causal": causal, "dtype": dtype}  # fmt: skip
    try:
        a = advise("attention", p, gpu=gpu, top_k=1)[0]
    except InputError:
        return None
    c = a.config
    return (c["block_m"], c["block_n"], c["num_warps"], c["num_stages"]), a.reason


def _note(head_dim: int, bm: int, bn: int, w: int, st: int, dt: str) -> tuple[dict[str, Any], str]:
    b = _budget(head_dim, bm, bn, w, st, dt)
    r, sm = b["registers"], b["smem"]
    note = (
        f"BLOCK_M={bm} BLOCK_N={bn} warps={w} stages={st}: registers S {r['s']:.0f} + P {r['p']:.0f} + "
        f"O {r['o']:.0f} + stats/addresses {r['stats'] + r['addresses']:.0f} = {r['total']:.0f} of {r['limit']}; "
        f"shared memory {sm['total_bytes'] // 1024} KB of {sm['limit_bytes'] // 1024} KB; "
        f"wgmma feed 0.5N/(16+0.25N) = {0.5 * bn / (16 + 0.25 * bn):.2f}"
    )
    return b, note


@functools.lru_cache(maxsize=4096)
def _forward_config_cached(
    head_dim: int, causal: bool, dtype: torch.dtype, interpreting: bool, batch: int, heads: int, kv_heads: int,
    seq_q: int, seq_k: int, gpu: str,
) -> ForwardConfig:  # fmt: skip
    """Tile sizes for the forward kernel, with the reason in numbers (shared-memory feed, registers, HBM).

    * BLOCK_N >= 64 keeps wgmma m64 nN k16 fed: per k16 slice the Tensor Cores take 0.5 N cycles
      while shared memory feeds A (64 x 16 x 2 B = 2 KB, 16 cycles at 128 B/cycle) and B
      (0.25 N cycles): 0.5 N >= 16 + 0.25 N gives N >= 64; compute/feed is 1.00 at 64, 1.33 at 128.
      The advisor may still take N = 32 where its time model says the shorter tile wins (small grids).
    * BLOCK_N <= 128 from registers: with 8 warps (two warpgroups of 64 rows) S costs N/2 and O
      D/2 fp32 registers per thread: 64 + 64 at N = D = 128, plus P (bf16, 32), statistics and
      addresses: 188 of 255 (model); N = 256 would need 128 for S alone and spill. The advisor's space
      holds only the tiles inside this budget (`tilewise.advise.space.attention_fits`).
    * shared memory: Q (BLOCK_M x D) + stages x K/V tiles (2 x BLOCK_N x D) under 227 KB:
      128 x 128 tiles at D = 128: 32 KB + 3 x 64 KB = 224 KB, so at most 3 stages. fp32 rows are
      twice as wide: 128 x 128 x 3 stages asked Triton for 393,216 B at D = 128 (limit 232,448), so
      fp32 is budgeted at 4 bytes and takes the first smaller tile that fits.
    """
    dt = _dtype_key(dtype)
    if interpreting:
        # the interpreter runs whole tiles in numpy; 32 x 32 tiles keep small test shapes cheap
        return ForwardConfig(
            block_m=32, block_n=32, num_warps=4, num_stages=1, use_desc=True, reason="interpreter: 32 x 32 tiles"
        )
    # fp32 asks the advisor for the 16-bit problem (same tiles, half the bytes), then shrinks below
    adv = _advised(batch, heads, kv_heads, seq_q, seq_k, head_dim, causal, "fp16" if dt == "fp32" else dt, gpu)
    if adv is not None and dt != "fp32":
        _, note = _note(head_dim, *adv[0], dt)
        bm, bn, w, st = adv[0]
        return ForwardConfig(
            block_m=bm, block_n=bn, num_warps=w, num_stages=st, use_desc=True, reason=f"advisor top-1: {adv[1]}; {note}"
        )
    if adv is not None:
        start, origin = adv[0], f"fp32: the 16-bit advisor top-1 ({adv[1]}), shrunk to fit"
    else:
        start, origin = _RULE_TILE, f"the advisor has no {dt} tile for {gpu}: the 64 x 64 rule, shrunk to fit"
    notes: list[str] = []
    chain = [start, *_smaller(*start)]
    # two stages or more where any fits: compiled for sm_90 (triton 3.6, no GPU), the one-stage fp32 tiles this chain
    # reaches first spilled 126-146 KB at D 128 / 256; the two-stage ones below them 8-61 KB (fp32 is the slow path)
    chain = [t for t in chain if t[3] >= 2] + [t for t in chain if t[3] < 2]
    for tile in chain:
        b, note = _note(head_dim, *tile, dt)
        # a tile below the advisor's needs only the shared memory (registers past the budget spill and slow
        # it, shared memory past the limit does not launch)
        if b["smem"]["fits"]:
            rejected = ("; " + " | ".join(notes)) if notes else ""
            bm, bn, w, st = tile
            return ForwardConfig(
                block_m=bm, block_n=bn, num_warps=w, num_stages=st, use_desc=True, reason=f"{origin}; {note}{rejected}"
            )
        notes.append("rejected " + note)
    raise InputError(
        f"attention: no tile of head_dim {head_dim} in {dt} fits the shared memory of one block "
        f"({_budget(head_dim, 16, 16, 4, 1, dt)['smem']['limit_bytes']} bytes); use float16 or bfloat16"
    )


# ------------------------------------------------------------------------------ kernel


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _attn_tile_loop(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    acc,
    l_i,
    m_i,
    q,
    k_ptrs,
    v_ptrs,
    k_desc,
    v_desc,
    kv_row0,
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
    USE_DESC: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
    WS: tl.constexpr,
):
    """Online softmax over the key tiles [lo, hi); MASKED tiles check bounds and the diagonal."""
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WS and not MASKED):
        offs_n = start_n + offs_n0
        if MASKED:
            k = tl.load(k_ptrs + start_n * stride_kn, mask=(offs_n < seq_k)[:, None], other=0.0)
        elif USE_DESC:
            k = k_desc.load([kv_row0 + start_n, 0])
        else:
            k = tl.load(k_ptrs + start_n * stride_kn)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION)  # [BM, BN] fp32, in registers
        if MASKED:
            s = s * qk_scale  # log2 domain
            valid = (offs_n < seq_k)[None, :]
            if CAUSAL:
                valid = valid & (offs_n[None, :] <= offs_m[:, None] + causal_shift)
            s = tl.where(valid, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)  # rows with no key yet stay at 0
            p = tl.math.exp2(s - m_use[:, None])
        else:
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
            m_use = m_new
            p = tl.math.exp2(s * qk_scale - m_use[:, None])  # one FMA per element
        alpha = tl.math.exp2(m_i - m_use)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if MASKED:
            v = tl.load(v_ptrs + start_n * stride_vn, mask=(offs_n < seq_k)[:, None], other=0.0)
        elif USE_DESC:
            v = v_desc.load([kv_row0 + start_n, 0])
        else:
            v = tl.load(v_ptrs + start_n * stride_vn)
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _attn_fwd_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # pointers (and TMA descriptors over the [B*Hkv*Sk, D] views of K and V)
    Q,
    K,
    V,
    O,
    LSE,
    k_desc,
    v_desc,
    # sizes
    num_heads,
    num_kv_heads,
    seq_q,
    seq_k,
    qk_scale,
    # strides
    stride_qb,
    stride_qh,
    stride_qm,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_vb,
    stride_vh,
    stride_vn,
    stride_ob,
    stride_oh,
    stride_om,
    # meta-parameters
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
    USE_DESC: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
    WS: tl.constexpr,
):
    tl.static_assert(BLOCK_N >= 16)
    num_m = tl.cdiv(seq_q, BLOCK_M)
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = num_m - 1 - pid_m  # the longest rows (most keys) start first: a shorter tail
    bh = tl.program_id(1)
    b = bh // num_heads
    h = bh % num_heads
    hk = h // (num_heads // num_kv_heads)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_base = Q + b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :], mask=(offs_m < seq_q)[:, None], other=0.0)
    k_ptrs = K + b.to(tl.int64) * stride_kb + hk.to(tl.int64) * stride_kh
    k_ptrs = k_ptrs + offs_n0[:, None] * stride_kn + offs_d[None, :]
    v_ptrs = V + b.to(tl.int64) * stride_vb + hk.to(tl.int64) * stride_vh
    v_ptrs = v_ptrs + offs_n0[:, None] * stride_vn + offs_d[None, :]
    kv_row0 = (b * num_kv_heads + hk) * seq_k  # first row of this head in the descriptors' 2-D view

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    full_end = (seq_k // BLOCK_N) * BLOCK_N  # key tiles with no key past the end
    hi = seq_k
    causal_shift = seq_k - seq_q  # query i sees keys j <= i + causal_shift
    if CAUSAL:
        m0 = pid_m * BLOCK_M
        # every row of this tile sees keys <= m0 + shift: those tiles need no mask
        below = tl.maximum(m0 + causal_shift + 1, 0)
        full_end = tl.minimum((below // BLOCK_N) * BLOCK_N, full_end)
        hi = tl.minimum(tl.maximum(m0 + BLOCK_M + causal_shift, 0), seq_k)  # past it: never loaded
    acc, l_i, m_i = _attn_tile_loop(
        acc, l_i, m_i, q, k_ptrs, v_ptrs, k_desc, v_desc, kv_row0, stride_kn, stride_vn, offs_m, offs_n0,
        0, full_end, seq_k, causal_shift, qk_scale,
        BLOCK_N, False, CAUSAL, USE_DESC, DOT_PRECISION, WS,
    )  # fmt: skip
    acc, l_i, m_i = _attn_tile_loop(
        acc, l_i, m_i, q, k_ptrs, v_ptrs, k_desc, v_desc, kv_row0, stride_kn, stride_vn, offs_m, offs_n0,
        full_end, hi, seq_k, causal_shift, qk_scale,
        BLOCK_N, True, CAUSAL, USE_DESC, DOT_PRECISION, WS,
    )  # fmt: skip

    has_key = l_i > 0.0
    out = acc / tl.where(has_key, l_i, 1.0)[:, None]
    lse = tl.where(has_key, (m_i + tl.math.log2(tl.where(has_key, l_i, 1.0))) * 0.6931471805599453, float("-inf"))
    o_base = O + b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh
    row_ok = offs_m < seq_q
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :], out.to(O.dtype.element_ty), mask=row_ok[:, None])
    tl.store(LSE + bh.to(tl.int64) * seq_q + offs_m, lse, mask=row_ok)


# ---------------------------------------------------------------------------- launcher


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        require(isinstance(t, torch.Tensor), f"{name} must be a torch.Tensor, got {type(t).__name__}")
        require(t.dim() == 4, f"{name} must have shape [batch, heads, seq, head_dim], got {list(t.shape)}")
    require(
        q.dtype in _DTYPES, f"q must be float16, bfloat16 or float32, got {q.dtype}"
    )  # fmt: skip
    require(
        k.dtype == q.dtype and v.dtype == q.dtype,
        f"q, k and v must share one dtype, got q {q.dtype}, k {k.dtype}, v {v.dtype}",
    )
    require(
        q.device == k.device == v.device,
        f"q, k and v must be on one device, got q {q.device}, k {k.device}, v {v.device}",
    )
    B, H, _Sq, D = q.shape
    require(
        k.shape == v.shape, f"k and v must have the same shape, got k {list(k.shape)} and v {list(v.shape)}"
    )  # fmt: skip
    Bk, Hk, Sk, Dk = k.shape
    require(Bk == B, f"k must have batch {B} like q, got {Bk} (k shape {list(k.shape)})")
    require(Dk == D, f"k must have head_dim {D} like q, got {Dk} (q {list(q.shape)}, k {list(k.shape)})")
    require(
        D in (16, 32, 64, 128, 256), f"head_dim must be one of 16, 32, 64, 128, 256, got {D} (q shape {list(q.shape)})"
    )
    require(
        Hk >= 1 and H % Hk == 0,
        f"q heads must be a multiple of k/v heads (GQA), got q {H} heads and k/v {Hk} heads",
    )
    require(Sk >= 1, f"k must have at least one key, got sequence length {Sk}")
    if scale is not None:
        require(
            isinstance(scale, (int, float)) and math.isfinite(scale),
            f"scale must be a finite number or None, got {scale!r}",
        )


class _Plan:
    __slots__ = (
        "causal",
        "contig",
        "desc_blocks",
        "empty",
        "gluon",
        "ints",
        "launcher",
        "lse_shape",
        "out_shape",
        "scale",
    )
    causal: bool
    contig: tuple[bool, bool, bool]  # q, k, v read through a contiguous copy (head_dim not unit-stride)
    desc_blocks: list[int] | None  # the TMA box of K and V; None: pointer loads
    empty: bool  # nothing to compute (Sq, B or H is 0)
    gluon: bool  # the Gluon kernel (tilewise.kernels.attention_gluon) runs it
    ints: tuple[float, ...]  # the kernel's scalar arguments
    launcher: Launcher
    lse_shape: tuple[int, int, int]
    out_shape: tuple[int, int, int, int]
    scale: float | None


def _make_plan(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool,
    scale: float | None,
    config: ForwardConfig | None,
) -> _Plan:
    _check(q, k, v, scale)
    B, H, Sq, D = q.shape
    Hk, Sk = k.shape[1], k.shape[2]
    plan = _Plan()
    plan.out_shape = (B, H, Sq, D)
    plan.lse_shape = (B, H, Sq)
    plan.empty = Sq == 0 or B == 0 or H == 0
    if plan.empty:
        return plan
    # the kernel reads rows with unit stride along head_dim
    plan.contig = (q.stride(-1) != 1, k.stride(-1) != 1, v.stride(-1) != 1)
    q = q.contiguous() if plan.contig[0] else q
    k = k.contiguous() if plan.contig[1] else k
    v = v.contiguous() if plan.contig[2] else v
    # FA3 in Gluon on Hopper (tilewise.kernels.attention_gluon); the Triton launcher below stays the fallback
    plan.gluon = config is None and use_gluon(q, k, v, scale, bool(causal))
    plan.causal, plan.scale = bool(causal), scale
    cfg = config or forward_config(
        D, causal, q.dtype, Sq, batch=B, heads=H, kv_heads=Hk, seq_k=Sk, gpu=gpu_key(q.device)
    )
    sm_scale = (1.0 / math.sqrt(D)) if scale is None else float(scale)
    # TMA descriptors only where their host cost hides (`long_kernel`), unless a config asks for them
    flops = 4.0 * B * H * Sq * Sk * D
    nbytes = (2 * B * H * Sq + 2 * B * Hk * Sk) * D * q.element_size()
    use_desc = (
        cfg.use_desc and TensorDescriptor is not None and flat_rows(k) and flat_rows(v)
        and (config is not None or interpreting() or long_kernel(q.device, flops, nbytes, q.dtype))
    )  # fmt: skip
    plan.desc_blocks = [cfg.block_n, D] if use_desc else None
    plan.launcher = Launcher(
        _attn_fwd_kernel, (cdiv(Sq, cfg.block_m), B * H),
        dict(
            HEAD_DIM=D, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, CAUSAL=bool(causal), USE_DESC=use_desc,
            DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32", WS=bool(cfg.warp_specialize),
        ),
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    # out and lse are allocated contiguous, so their strides are the plan's too
    plan.ints = (
        H, Hk, Sq, Sk, sm_scale * LOG2E,
        q.stride(0), q.stride(1), q.stride(2),
        k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2),
        H * Sq * D, Sq * D, D,
    )  # fmt: skip
    return plan


def _run(plan: _Plan, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if plan.empty:
        return (torch.empty(plan.out_shape, device=q.device, dtype=q.dtype),
                torch.empty(plan.lse_shape, device=q.device, dtype=torch.float32))  # fmt: skip
    cq, ck, cv = plan.contig
    q = q.contiguous() if cq else q
    k = k.contiguous() if ck else k
    v = v.contiguous() if cv else v
    if plan.gluon:
        try:
            return gluon_attention(q, k, v, causal=plan.causal, scale=plan.scale)
        except Exception as exc:  # a compile or resource failure on an untested shape: say so once, then Triton
            gluon_failed(exc)
            plan.gluon = False
    out = torch.empty(plan.out_shape, device=q.device, dtype=q.dtype)
    lse = torch.empty(plan.lse_shape, device=q.device, dtype=torch.float32)
    if plan.desc_blocks is not None:
        k_desc, v_desc = _desc(k, plan.desc_blocks), _desc(v, plan.desc_blocks)
    else:
        k_desc, v_desc = k, v
    plan.launcher(q, k, v, out, lse, k_desc, v_desc, *plan.ints)
    return out, lse


def _run_first(plan: _Plan, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The first launch compiles: a tile the model let through but Triton cannot place is refused in words."""
    try:
        return _run(plan, q, k, v)
    except OutOfResources as e:
        raise InputError(
            f"attention: the tiles for head_dim {q.shape[-1]} in {q.dtype} need more on-chip memory than the GPU "
            f"has ({e}); use float16 or bfloat16, or pass a smaller config"
        ) from None


# Launch plans by call signature (q, k, v: shapes, strides, dtypes, devices, alignment; causal, scale, config).
_PLANS = PlanCache()


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    scale: float | None = None,
    config: ForwardConfig | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(scale * Q K^T [+ causal mask]) V for q [B, H, Sq, D], k/v [B, Hkv, Sk, D].

    fp16, bf16 (and fp32, slow) inputs; D in {16, 32, 64, 128, 256}; H a multiple of Hkv (GQA).
    Returns (out [B, H, Sq, D] in q's dtype, lse [B, H, Sq] fp32, natural log).
    `config` overrides the tile choice (benchmark sweeps).
    """
    key: tuple[Any, ...] | None
    try:
        key = (
            q.shape, q.stride(), q.dtype, q.device, q.data_ptr() % 16 == 0,
            k.shape, k.stride(), k.dtype, k.device, k.data_ptr() % 16 == 0,
            v.shape, v.stride(), v.dtype, v.device, v.data_ptr() % 16 == 0,
            causal, scale, type(scale), config,
        )  # fmt: skip
        plan = _PLANS.get(key)
    except (AttributeError, TypeError):  # not tensors, or an unhashable option: the checks refuse it
        key = plan = None
    if plan is not None:
        return _run(plan, q, k, v)
    plan = _make_plan(q, k, v, causal, scale, config)
    result = _run_first(plan, q, k, v)
    if key is not None:
        _PLANS.put(key, plan)
    return result


def _desc(t: torch.Tensor, block: list[int]) -> Any:
    B, H, S, D = t.shape
    return TensorDescriptor(t, [B * H * S, D], [D, 1], block)


__all__ = ["ForwardConfig", "attention", "forward_config"]

check_attention = _check  # public: tilewise.kernels.custom_ops runs it in the fake impls
