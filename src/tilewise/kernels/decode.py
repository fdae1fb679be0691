"""Split-KV decode attention in Triton: one new token per sequence, GQA packed into M.

    out, lse = decode_attention(q, k_cache, v_cache, seq_lens)
    # q [B, Hq, D] (or [B, Hq, 1, D]); k_cache/v_cache [B, Hkv, L_cache, D]; seq_lens [B] ints

Decode attention is memory-bound no matter what (one query row per head), so the goal changes
from Tensor-Core utilisation to saturating HBM. This file does three things for that:

* GQA sharing: the Hq / Hkv query heads of one group are the rows (M) of one tile, so
  every K/V byte loaded serves the whole group (SDPA with `enable_gqa=True` does the same;
  expanding K/V per query head would read it Hq / Hkv times).
* Split-KV: the keys of each (sequence, KV head) are cut into `num_splits` chunks, one
  program each, so that small batches still put every SM to work. The count comes from the
  model's wave-efficiency rule (`tilewise.model.decode.choose_num_splits`); an optional cap
  on the keys one program streams (`max_chunk=`, `MAX_CHUNK`) shortens the last programs,
  off by default (the H200 sweep measured the model's count alone best). The partial results
  merge by their log-sum-exp either in the same launch (the last split of each (sequence, KV
  head) to finish, through a counter per pair that it sets back to zero) or in a second kernel,
  as `tilewise.model.predict.decode_merge` chooses for CUDA-graph capture and for eager calls
  (`merge_placement`): each program of an in-launch merge pays its counter's round trip, so at 128
  programs it measured 1-1.5 us faster in graphs (and up to 9 us eagerly, where the second launch costs
  the host ~5 us), with thousands the second kernel wins by 10-20 us (H200, 349 pairs timed both ways:
  benchmarks/results/h200/decode_variants.json). The merge is one pass over chunks of splits with the
  count a runtime value, so one compiled kernel serves every split count.
* Variable lengths without padding traffic: a program reads keys [start, min(start +
  chunk, len)) of its sequence only; chunks past the end load nothing and leave a partial of
  weight 0 (lse -inf).

Paged caches: pass `block_table` [B, max_pages] (int32, page ids) and k/v caches shaped
[num_pages, Hkv, page_size, D]; page_size must be a multiple of the key tile.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import triton
import triton.language as tl

from tilewise.advise import default_config
from tilewise.errors import InputError, require
from tilewise.kernels.utils import (
    Launcher,
    PlanCache,
    contiguous_strides,
    flat_rows,
    gpu_key,
    interpreting,
    signature,
    sm_count,
    workspace,
)
from tilewise.model.decode import choose_num_splits
from tilewise.model.predict import decode_merge
from tilewise.util import cdiv, next_power_of_2

try:  # host-side TMA descriptors (triton >= 3.4); the interpreter understands them too
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - older triton
    TensorDescriptor = None

LOG2E = 1.4426950408889634
LN2 = tl.constexpr(0.6931471805599453)  # a constexpr: jit functions may read only constexpr globals
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

# Defaults and the rows that chose them: tests/data/tuning/decode.md (H200, bf16, D 128, triton 3.6). In short:
# (BLOCK_N, warps, stages) = (128, 4, 3) with plain loads at the model's split count was within 1% of the best of
# 70 tile x split variants on six shapes (CUDA-graph times); descriptors cost host time for no GPU gain; no cap on
# the keys per program.
MAX_CHUNK = 1 << 30
# The tile above was measured at D 128 in 16-bit: K + V stages of 2 x 128 x 128 x 2 B x 3 = 192 KiB of shared
# memory. Wider rows (D 256, or fp32) keep that footprint with fewer keys per tile (64, then 32).
DECODE_SMEM = 192 * 1024
DECODE_TILE = (128, 4, 3)
USE_DESC = False
MAX_SPLITS = 64
MERGES = ("inline", "launch")  # where the split partials merge (tilewise.model.predict.DECODE_MERGES)
# The merge's pass over the partials: floats per step (128 a thread at 4 warps) and the steps whose loads are in
# flight at once (`tl.range`'s num_stages: 1 loads a step only after the last one is merged). Each step is a
# dependent round trip, so fewer, larger steps win. H200, CUDA graphs, beside SDPA (the advisor's plans; 4096 /
# 8192 / 16384 floats a step): B2 Hq16 Hkv2 L64k 62.2 / 50.4 / 43.7 us (SDPA 39.2), B1 Hq64 Hkv8 L64k 78.9 /
# 73.4 / 70.1 (68.3), B1 Hq32 Hkv8 L1k 9.9 / 8.6 / 8.3 (7.6), B1 Hq16 Hkv4 L32k D256 46.4 / 43.0 / 42.1 (53.9);
# 2 or 3 stages moved none of them by more than 3%.
MERGE_FLOATS = 16384
MERGE_STAGES = 1


# ------------------------------------------------------------------------------ config choice


def choose_splits(
    batch: int, kv_heads: int, max_len: int, sms: int, block_n: int, max_chunk: int | None = None
) -> tuple[int, int]:
    """(num_splits, chunk): the model's wave rule, then chunks capped at `max_chunk` (MAX_CHUNK) keys.

    chunk is a multiple of block_n; num_splits = ceil(max_len / chunk). Cached: the model's plan
    costs ~0.2 ms of Python, more than a whole decode step on the GPU.
    """
    return _choose_splits_cached(batch, kv_heads, max_len, sms, block_n, max_chunk or MAX_CHUNK)


@functools.lru_cache(maxsize=4096)
def _choose_splits_cached(
    batch: int, kv_heads: int, max_len: int, sms: int, block_n: int, max_chunk: int
) -> tuple[int, int]:
    splits = choose_num_splits(batch, kv_heads, max(max_len, 1), sms, block_n=block_n, max_splits=MAX_SPLITS)
    splits = max(int(splits), cdiv(max_len, max_chunk), 1)
    chunk = cdiv(cdiv(max(max_len, 1), splits), block_n) * block_n
    return cdiv(max(max_len, 1), chunk), chunk


@functools.lru_cache(maxsize=64)
def default_tile(head_dim: int, elem_bytes: int) -> tuple[int, int, int]:
    """The default (BLOCK_N, warps, stages), with BLOCK_N narrowed until the K/V stages fit DECODE_SMEM."""
    block_n, warps, stages = DECODE_TILE
    while block_n > 16 and 2 * block_n * head_dim * elem_bytes * stages > DECODE_SMEM:
        block_n //= 2
    return block_n, warps, stages


@functools.lru_cache(maxsize=4096)
def advised_plan(
    batch: int, heads: int, kv_heads: int, seq_len: int, head_dim: int, dtype: torch.dtype, gpu: str
) -> tuple[int, int, int, int] | None:
    """(block_n, warps, stages, num_splits) of the advisor's top-1 for 16-bit caches, else None (fp32 and
    shapes outside the advisor's range keep `default_tile` and the wave rule). The sweep timed both on
    the H200: the advisor's top-1 within 5% of the best of 7 tiles x 7 split counts on ~80% of the
    held-out problems, the rule before it on 9% (docs/advise.md)."""
    name = {torch.float16: "fp16", torch.bfloat16: "bf16"}.get(dtype)
    if name is None:
        return None
    p = {"batch": batch, "heads": heads, "kv_heads": kv_heads, "seq_len": seq_len, "head_dim": head_dim, "dtype": name}
    try:
        c = default_config("decode", p, gpu)
    except InputError:
        return None
    return c["block_n"], c["num_warps"], c["num_stages"], c["num_splits"]


@functools.lru_cache(maxsize=4096)
def merge_placement(
    batch: int, heads: int, kv_heads: int, seq_len: int, head_dim: int, dtype: torch.dtype, gpu: str, block_n: int,
    warps: int, stages: int, splits: int,
) -> tuple[str, str]:  # fmt: skip
    """(placement inside a CUDA-graph capture, placement eagerly) of the split partials' merge, each "inline"
    (the last split merges, one launch) or "launch" (a second kernel): the model's shorter step
    (`tilewise.model.predict.decode_merge`). A GPU or dtype the model does not know keeps "inline"."""
    name = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}[dtype]
    p = {"batch": batch, "heads": heads, "kv_heads": kv_heads, "seq_len": seq_len, "head_dim": head_dim, "dtype": name}
    c = {"block_n": block_n, "num_warps": warps, "num_stages": stages, "num_splits": splits}
    try:
        return decode_merge(p, c, gpu, graph=True), decode_merge(p, c, gpu, graph=False)
    except InputError:
        return "inline", "inline"


def _tma_rows(t: torch.Tensor) -> bool:
    """A cache a 2-D TMA descriptor can view: one row-major [N*H*L, D] matrix, int32 rows, 16-byte rows."""
    n, h, L, d = t.shape
    return flat_rows(t) and n * h * L < 2**31 and (d * t.element_size()) % 16 == 0 and t.data_ptr() % 16 == 0


# ------------------------------------------------------------------------------ kernels


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _decode_tile_loop(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    acc,
    l_i,
    m_i,
    q,
    k_base,
    v_base,
    k_desc,
    v_desc,
    kv_row,
    table_row,
    offs_k,
    offs_v,
    lo,
    hi,
    seq_len,
    qk_scale,
    hk,
    num_kv_heads,
    stride_kn,
    stride_vn,
    stride_kpage,
    stride_vpage,
    offs_n0,
    BLOCK_N: tl.constexpr,
    PAGE: tl.constexpr,
    PAGED: tl.constexpr,
    MASKED: tl.constexpr,
    USE_DESC: tl.constexpr,
):
    """Online softmax over the key tiles [lo, hi) of one (sequence, KV head); MASKED checks the end.

    Unmasked tiles come through TMA descriptors (USE_DESC) or plain loads from loop-invariant
    offsets: no tensor of pointers is carried from one iteration to the next (the first version
    did, spilled, and streamed at 0.17 TB/s with 64-key tiles on the H200).
    """
    for start_n in range(lo, hi, BLOCK_N):
        if PAGED:
            page = tl.load(table_row + start_n // PAGE)
            row = (page * num_kv_heads + hk) * PAGE + start_n % PAGE  # row of the pool's [pages*Hkv*PAGE, D] view
            k_at = k_base + page.to(tl.int64) * stride_kpage + (start_n % PAGE) * stride_kn
            v_at = v_base + page.to(tl.int64) * stride_vpage + (start_n % PAGE) * stride_vn
        else:
            row = kv_row + start_n
            k_at = k_base + start_n * stride_kn
            v_at = v_base + start_n * stride_vn
        if MASKED:
            kmask = (start_n + offs_n0 < seq_len)[:, None]
            k = tl.load(k_at + offs_k, mask=kmask, other=0.0)
            v = tl.load(v_at + offs_v, mask=kmask, other=0.0)
        elif USE_DESC:
            k = k_desc.load([row, 0])
            v = v_desc.load([row, 0])
        else:
            k = tl.load(k_at + offs_k)
            v = tl.load(v_at + offs_v)
        s = tl.dot(q, tl.trans(k)) * qk_scale  # [BLOCK_G, BLOCK_N], log2 domain
        if MASKED:
            s = tl.where((start_n + offs_n0 < seq_len)[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


# counts stay runtime values (not specialised on divisibility by 16): one compile serves every split count and head count
@triton.jit(do_not_specialize=["num_kv_heads", "num_splits"])  # type: ignore[untyped-decorator]  # triton is Any
def _decode_split_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # pointers (and TMA descriptors over the [B*Hkv*L, D] / [pages*Hkv*PAGE, D] views of the caches)
    Q,
    K,
    V,
    k_desc,
    v_desc,
    LENS,
    TABLE,
    O,
    LSE,
    WS,
    COUNTERS,
    # sizes
    num_kv_heads,
    cache_len,
    num_splits,
    chunk,
    qk_scale,
    # strides
    stride_qb,
    stride_qh,
    stride_kb,
    stride_kh,
    stride_kn,
    stride_vb,
    stride_vh,
    stride_vn,
    stride_tb,
    stride_ob,
    stride_oh,
    # meta-parameters
    GROUP: tl.constexpr,
    BLOCK_G: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    SINGLE: tl.constexpr,
    PAGE: tl.constexpr,
    PAGED: tl.constexpr,
    USE_DESC: tl.constexpr,
    MERGE_G: tl.constexpr,
    SPLIT_CHUNK: tl.constexpr,
    MERGE_STAGES: tl.constexpr,
    INLINE: tl.constexpr,
):
    """Program (split, b * Hkv + kv head) attends its GROUP query heads to keys [split * chunk, ...).
    One split writes out and lse itself. With several, each writes its partial (out, lse) to the
    workspace; with INLINE it bumps its (sequence, kv head) counter and the last split to arrive merges the
    partials of every split in split order (deterministic) and resets the counter: one launch per call.
    Without INLINE `_decode_merge_kernel` merges them in a second launch."""
    split = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // num_kv_heads
    hk = bh % num_kv_heads
    seq_len = tl.load(LENS + b)
    # keys [lo, hi) of this split; chunks past the end are empty (no load): their partial has lse -inf
    lo = split * chunk
    hi = tl.minimum(lo + chunk, seq_len)
    full_hi = lo + tl.maximum(hi - lo, 0) // BLOCK_N * BLOCK_N
    offs_g = tl.arange(0, BLOCK_G)
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    g_ok = offs_g < GROUP
    heads = hk * GROUP + offs_g  # the group's query heads are the rows (M) of the tile
    q = tl.load(
        Q + b.to(tl.int64) * stride_qb + heads[:, None] * stride_qh + offs_d[None, :], mask=g_ok[:, None], other=0.0
    )
    if PAGED:
        kv_b = b * 0  # pages carry the batch: the table row names them
        table_row = TABLE + b.to(tl.int64) * stride_tb
    else:
        kv_b = b
        table_row = TABLE
    k_base = K + kv_b.to(tl.int64) * stride_kb + hk.to(tl.int64) * stride_kh
    v_base = V + kv_b.to(tl.int64) * stride_vb + hk.to(tl.int64) * stride_vh
    offs_k = offs_n0[:, None] * stride_kn + offs_d[None, :]
    offs_v = offs_n0[:, None] * stride_vn + offs_d[None, :]
    kv_row = (b * num_kv_heads + hk) * cache_len

    m_i = tl.full([BLOCK_G], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_G], tl.float32)
    acc = tl.zeros([BLOCK_G, HEAD_DIM], tl.float32)
    acc, l_i, m_i = _decode_tile_loop(
        acc, l_i, m_i, q, k_base, v_base, k_desc, v_desc, kv_row, table_row, offs_k, offs_v, lo, full_hi,
        seq_len, qk_scale, hk, num_kv_heads, stride_kn, stride_vn, stride_kb, stride_vb, offs_n0,
        BLOCK_N, PAGE, PAGED, False, USE_DESC,
    )  # fmt: skip
    acc, l_i, m_i = _decode_tile_loop(
        acc, l_i, m_i, q, k_base, v_base, k_desc, v_desc, kv_row, table_row, offs_k, offs_v, full_hi, hi,
        seq_len, qk_scale, hk, num_kv_heads, stride_kn, stride_vn, stride_kb, stride_vb, offs_n0,
        BLOCK_N, PAGE, PAGED, True, USE_DESC,
    )  # fmt: skip
    has_key = l_i > 0.0
    l_safe = tl.where(has_key, l_i, 1.0)
    out = acc / l_safe[:, None]
    lse2 = tl.where(has_key, m_i + tl.math.log2(l_safe), float("-inf"))  # log2 domain
    if SINGLE:
        o_ptrs = O + b.to(tl.int64) * stride_ob + heads[:, None] * stride_oh + offs_d[None, :]
        tl.store(o_ptrs, out.to(O.dtype.element_ty), mask=g_ok[:, None])
        tl.store(LSE + b * (num_kv_heads * GROUP) + heads, lse2 * LN2, mask=g_ok)
    else:
        # partials in WS: out [B * Hkv, num_splits, MERGE_G, D], then lse [B * Hkv, num_splits, MERGE_G]
        row = (bh.to(tl.int64) * num_splits + split) * MERGE_G + offs_g
        tl.store(WS + row[:, None] * HEAD_DIM + offs_d[None, :], out, mask=g_ok[:, None])
        lse_ptr = WS + tl.num_programs(1).to(tl.int64) * num_splits * MERGE_G * HEAD_DIM
        tl.store(lse_ptr + row, lse2, mask=g_ok)
        if INLINE:
            tl.debug_barrier()
            arrived = tl.atomic_add(COUNTERS + bh, 1, sem="acq_rel", scope="gpu")
            if arrived == num_splits - 1:
                _decode_merge(WS, lse_ptr, O, LSE, COUNTERS, b, bh, hk, num_kv_heads, num_splits, stride_ob,
                              stride_oh, GROUP, HEAD_DIM, MERGE_G, SPLIT_CHUNK, MERGE_STAGES, True)  # fmt: skip


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _decode_merge(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    WS, LSE_WS, O, LSE, COUNTERS, b, bh, hk, num_kv_heads, num_splits, stride_ob, stride_oh,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, MERGE_G: tl.constexpr, SPLIT_CHUNK: tl.constexpr,
    MERGE_STAGES: tl.constexpr, RESET: tl.constexpr,
):  # fmt: skip
    """The last split of (b, kv head) (or the merge launch's program for it): out_g = sum_s w_s o_s / sum_s w_s
    with w_s = 2^(lse_s - max_s lse_s), for the group's heads at once; splits without keys have lse -inf
    (weight 0). One pass over the splits in chunks of SPLIT_CHUNK, in split order (deterministic), rescaling
    the running sums when a chunk raises the maximum: the split count is a runtime value, so one compiled
    kernel serves every count (a constexpr count compiled one kernel per count, ~2 s each)."""
    offs_g = tl.arange(0, MERGE_G)
    offs_d = tl.arange(0, HEAD_DIM)
    offs_c = tl.arange(0, SPLIT_CHUNK)
    g_ok = offs_g < GROUP
    first = bh.to(tl.int64) * num_splits  # the (b, kv head)'s first split row
    m_i = tl.full([MERGE_G], float("-inf"), tl.float32)
    denom = tl.zeros([MERGE_G], tl.float32)
    acc = tl.zeros([MERGE_G, HEAD_DIM], tl.float32)
    for s0 in tl.range(0, num_splits, SPLIT_CHUNK, num_stages=MERGE_STAGES):
        ss = s0 + offs_c
        rows = (first + ss[:, None]) * MERGE_G + offs_g[None, :]  # [SPLIT_CHUNK, MERGE_G]
        ok = (ss[:, None] < num_splits) & g_ok[None, :]
        lse_c = tl.load(LSE_WS + rows, mask=ok, other=float("-inf"), cache_modifier=".cg")
        m_new = tl.maximum(m_i, tl.max(lse_c, 0))
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)  # no key yet: every weight is 0 either way
        alpha = tl.math.exp2(m_i - m_use)
        w = tl.math.exp2(lse_c - m_use[None, :])
        o_s = tl.load(WS + rows[:, :, None] * HEAD_DIM + offs_d[None, None, :], mask=ok[:, :, None], other=0.0,
                      cache_modifier=".cg")  # fmt: skip
        denom = denom * alpha + tl.sum(w, 0)
        acc = acc * alpha[:, None] + tl.sum(o_s * w[:, :, None], 0)
        m_i = m_new
    has_key = denom > 0.0
    d_safe = tl.where(has_key, denom, 1.0)
    out = acc / d_safe[:, None]
    lse = tl.where(has_key, (m_i + tl.math.log2(d_safe)) * LN2, float("-inf"))
    heads = hk * GROUP + offs_g
    tl.store(O + b.to(tl.int64) * stride_ob + heads[:, None] * stride_oh + offs_d[None, :],
             out.to(O.dtype.element_ty), mask=g_ok[:, None])  # fmt: skip
    tl.store(LSE + b * (num_kv_heads * GROUP) + heads, lse, mask=g_ok)
    if RESET:
        tl.atomic_xchg(COUNTERS + bh, 0)


@triton.jit(do_not_specialize=["num_kv_heads", "num_splits"])  # type: ignore[untyped-decorator]  # triton is Any
def _decode_merge_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    WS, O, LSE, num_kv_heads, num_splits, stride_ob, stride_oh,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, MERGE_G: tl.constexpr, SPLIT_CHUNK: tl.constexpr,
    MERGE_STAGES: tl.constexpr,
):  # fmt: skip
    """The merge as its own launch, program b * Hkv + kv head: every SM merges at once, after every split."""
    bh = tl.program_id(0)
    lse_ptr = WS + tl.num_programs(0).to(tl.int64) * num_splits * MERGE_G * HEAD_DIM
    _decode_merge(WS, lse_ptr, O, LSE, WS, bh // num_kv_heads, bh, bh % num_kv_heads, num_kv_heads, num_splits,
                  stride_ob, stride_oh, GROUP, HEAD_DIM, MERGE_G, SPLIT_CHUNK, MERGE_STAGES, False)  # fmt: skip


# ---------------------------------------------------------------------------- launcher


def _as_lens(
    seq_lens: torch.Tensor | Sequence[int], batch: int, device: torch.device
) -> tuple[torch.Tensor, int | None, list[int] | None]:
    """seq_lens as an int32 tensor on `device`, and its maximum when known without a device sync."""
    if isinstance(seq_lens, torch.Tensor):
        require(
            seq_lens.dim() == 1 and seq_lens.shape[0] == batch,
            f"seq_lens must have shape [{batch}] (one length per sequence), got {list(seq_lens.shape)}",
        )
        require(
            not seq_lens.is_floating_point() and not seq_lens.is_complex() and seq_lens.dtype != torch.bool,
            f"seq_lens must hold integers, got {seq_lens.dtype}",
        )
        if seq_lens.device.type == "cpu":
            host = [int(x) for x in seq_lens.tolist()]
            return torch.tensor(host, dtype=torch.int32, device=device), (max(host) if host else 0), host
        require(
            seq_lens.device == device,
            f"seq_lens must be on the cache's device {device} (or the CPU), got {seq_lens.device}",
        )
        return seq_lens.to(torch.int32), None, None
    require(
        isinstance(seq_lens, Sequence), f"seq_lens must be a tensor or a list of ints, got {type(seq_lens).__name__}"
    )
    require(len(seq_lens) == batch, f"seq_lens must have {batch} entries (one per sequence), got {len(seq_lens)}")
    host = []
    for i, x in enumerate(seq_lens):
        require(
            isinstance(x, int) or (hasattr(x, "__index__") and not isinstance(x, bool)),
            f"seq_lens[{i}] must be an integer, got {x!r}",
        )
        host.append(int(x))
    return torch.tensor(host, dtype=torch.int32, device=device), (max(host) if host else 0), host


def _need(ok: bool, message: Callable[..., str]) -> None:
    """Raise InputError(message()) unless ok: the message is built only on failure (decode steps are short).
    (`...`: the lambdas that bind a loop's variables as defaults are called with no argument too.)"""
    if not ok:
        raise InputError(message())


def _check(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_table: torch.Tensor | None,
    scale: float | None,
) -> None:
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        _need(isinstance(t, torch.Tensor), lambda n=name, t=t: f"{n} must be a torch.Tensor, got {type(t).__name__}")
    _need(
        q.dim() in (3, 4),
        lambda: f"q must have shape [batch, heads, head_dim] or [batch, heads, 1, head_dim], got {list(q.shape)}",
    )
    if q.dim() == 4:
        _need(q.shape[2] == 1, lambda: f"q must hold one new token per sequence (dim 2 of size 1), got {list(q.shape)}")
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        _need(
            t.dim() == 4,
            lambda n=name, t=t: f"{n} must have shape [batch, kv_heads, cache_len, head_dim], got {list(t.shape)}",
        )
    _need(q.dtype in _DTYPES, lambda: f"q must be float16, bfloat16 or float32, got {q.dtype}")
    _need(
        k_cache.dtype == q.dtype and v_cache.dtype == q.dtype,
        lambda: (
            f"q, k_cache and v_cache must share one dtype, got q {q.dtype}, k_cache {k_cache.dtype}, "
            f"v_cache {v_cache.dtype}"
        ),
    )
    _need(
        q.device == k_cache.device == v_cache.device,
        lambda: (
            f"q, k_cache and v_cache must be on one device, got q {q.device}, k_cache {k_cache.device}, "
            f"v_cache {v_cache.device}"
        ),
    )
    _need(
        k_cache.shape == v_cache.shape,
        lambda: f"k_cache and v_cache must have the same shape, got {list(k_cache.shape)} and {list(v_cache.shape)}",
    )
    B, Hq, D = q.shape[0], q.shape[1], q.shape[-1]
    NB, Hk, _L, Dk = k_cache.shape
    _need(Dk == D, lambda: f"k_cache must have head_dim {D} like q, got {Dk}")
    _need(D in (16, 32, 64, 128, 256), lambda: f"head_dim must be one of 16, 32, 64, 128, 256, got {D}")
    _need(Hq % Hk == 0, lambda: f"q heads must be a multiple of the cache's kv heads (GQA), got q {Hq} and cache {Hk}")
    if block_table is None:
        _need(NB == B, lambda: f"k_cache must have batch {B} like q, got {NB}")
    else:
        _need(isinstance(block_table, torch.Tensor), lambda: "block_table must be a torch.Tensor of page ids")
        _need(
            block_table.dim() == 2 and block_table.shape[0] == B,
            lambda: f"block_table must have shape [{B}, max_pages], got {list(block_table.shape)}",
        )
        _need(
            block_table.dtype in (torch.int32, torch.int64),
            lambda: f"block_table must be int32 or int64, got {block_table.dtype}",
        )
        _need(block_table.device == q.device, lambda: f"block_table must be on {q.device}, got {block_table.device}")
    if scale is not None:
        _need(
            isinstance(scale, (int, float)) and math.isfinite(scale),
            lambda: f"scale must be a finite number or None, got {scale!r}",
        )


class _Plan:
    __slots__ = (
        "contig",
        "desc_block",
        "empty",
        "ints",
        "launcher",
        "lse_shape",
        "lse_strides",
        "merge_eager",
        "merge_graph",
        "merge_ints",
        "merge_launcher",
        "out_shape",
        "out_strides",
        "rows",
        "split_launcher",
        "ws_counters",
        "ws_numel",
    )  # fmt: skip
    contig: tuple[bool, bool, bool]  # q, k, v read through a contiguous copy (head_dim not unit-stride)
    desc_block: list[int] | None  # the TMA box of the key tiles; None: pointer loads
    empty: bool  # a batch of 0: nothing to launch
    ints: tuple[float, ...]  # the split kernel's scalar arguments
    launcher: Launcher | None  # the split kernel, merging inline where a placement is "inline"
    lse_shape: tuple[int, int]
    lse_strides: tuple[int, int]
    merge_eager: str  # where the partials merge: "inline" or "launch" (MERGES), eagerly
    merge_graph: str  # and inside a CUDA-graph capture
    merge_ints: tuple[int, int, int, int]
    merge_launcher: Launcher | None  # the merge kernel, where a placement is "launch"
    out_shape: tuple[int, ...]
    out_strides: tuple[int, ...]
    rows: int  # rows of the [N*H*L, D] view the descriptors take
    split_launcher: Launcher | None  # the split kernel without the merge, where a placement is "launch"
    ws_counters: int
    ws_numel: int  # workspace floats (0: one split writes out and lse itself)


def _make_plan(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    table: torch.Tensor,
    paged: bool,
    scale: float | None,
    num_splits: int | None,
    max_len: int,
    tile: tuple[int, int, int] | None,
    max_chunk: int | None,
    use_desc: bool | None,
    merge: str | None,
) -> _Plan:
    """Everything a call with this signature (and this longest sequence) launches; `table` is the int32
    block table when `paged` (else the lengths, unused)."""
    B, Hq, D = q.shape[0], q.shape[1], q.shape[-1]
    Hk = k_cache.shape[1]
    plan = _Plan()
    plan.out_shape, plan.out_strides = tuple(q.shape), contiguous_strides(q.shape)
    plan.lse_shape, plan.lse_strides = (B, Hq), (Hq, 1)
    plan.empty = B == 0
    advised = None
    if tile is None and num_splits is None and max_chunk is None:
        advised = advised_plan(B, Hq, Hk, max(max_len, 1), D, q.dtype, gpu_key(q.device))
    if advised is not None:  # the advisor's top-1 key tile and split count (tilewise.advise)
        block_n, warps, stages, num_splits = advised
    elif tile is None:
        block_n, warps, stages = default_tile(D, q.element_size())
    else:
        block_n, warps, stages = tile
    if interpreting():
        warps, stages = 4, 1
    if not paged:
        page = block_n
    else:
        page = k_cache.shape[2]
        if tile is None:  # the default tile, halved until it fits the page: key tiles never straddle pages
            while block_n > 16 and page % block_n:
                block_n //= 2
            require(page % block_n == 0, f"page_size must be a multiple of 16 keys (the smallest key tile), got {page}")
        require(page % block_n == 0, f"page_size must be a multiple of the key tile {block_n}, got {page}")
    group = Hq // Hk
    block_g = max(16, next_power_of_2(group))  # mma.sync needs M >= 16
    if num_splits is None:
        splits, chunk = choose_splits(B, Hk, max(max_len, 1), sm_count(q.device), block_n, max_chunk)
    else:
        splits = int(num_splits)
        require(splits >= 1, f"num_splits must be >= 1, got {num_splits}")
        chunk = cdiv(cdiv(max(max_len, 1), splits), block_n) * block_n
    sm_scale = (1.0 / math.sqrt(D)) if scale is None else float(scale)
    # the kernels read rows with unit stride along head_dim; q [B, Hq, 1, D] is read as [B, Hq, D]
    plan.contig = (q.stride(-1) != 1, k_cache.stride(-1) != 1, v_cache.stride(-1) != 1)
    q3 = q.reshape(B, Hq, D) if q.dim() == 4 else q
    q3 = q3.contiguous() if plan.contig[0] else q3
    k = k_cache.contiguous() if plan.contig[1] else k_cache
    v = v_cache.contiguous() if plan.contig[2] else v_cache
    merge_g = next_power_of_2(group)
    # the workspace: partial out and lse per (sequence, kv head, split, head of the group), and a counter per
    # (sequence, kv head) that the last split sets back to zero
    plan.ws_numel = B * Hk * splits * merge_g * (D + 1) if splits > 1 else 0
    plan.ws_counters = B * Hk if splits > 1 else 0
    tma = (USE_DESC if use_desc is None else bool(use_desc)) and TensorDescriptor is not None
    tma = tma and _tma_rows(k) and _tma_rows(v)
    plan.rows = k.shape[0] * k.shape[1] * k.shape[2]
    plan.desc_block = [block_n, D] if tma else None
    # the merge reads the partials in chunks of <= MERGE_FLOATS floats, whatever the count
    merge_consts = dict(GROUP=group, HEAD_DIM=D, MERGE_G=merge_g, SPLIT_CHUNK=max(1, MERGE_FLOATS // (merge_g * D)),
                        MERGE_STAGES=MERGE_STAGES)  # fmt: skip
    split_consts = dict(
        GROUP=group, BLOCK_G=block_g, BLOCK_N=block_n, HEAD_DIM=D, SINGLE=splits == 1,
        PAGE=page, PAGED=paged, USE_DESC=tma, MERGE_G=merge_g, SPLIT_CHUNK=merge_consts["SPLIT_CHUNK"],
        MERGE_STAGES=MERGE_STAGES,
    )  # fmt: skip
    if merge is None:
        plan.merge_graph, plan.merge_eager = merge_placement(B, Hq, Hk, max(max_len, 1), D, q.dtype,
                                                            gpu_key(q.device), block_n, warps, stages, splits)  # fmt: skip
    else:
        require(merge in MERGES, f"merge must be one of {', '.join(MERGES)} or None, got {merge!r}")
        plan.merge_graph = plan.merge_eager = merge
    plan.launcher = plan.split_launcher = plan.merge_launcher = None
    if splits == 1 or "inline" in (plan.merge_graph, plan.merge_eager):
        plan.launcher = Launcher(_decode_split_kernel, (splits, B * Hk), dict(split_consts, INLINE=True),
                                 num_warps=warps, num_stages=stages)  # fmt: skip
    if splits > 1 and "launch" in (plan.merge_graph, plan.merge_eager):
        plan.split_launcher = Launcher(_decode_split_kernel, (splits, B * Hk), dict(split_consts, INLINE=False),
                                       num_warps=warps, num_stages=stages)  # fmt: skip
        plan.merge_launcher = Launcher(_decode_merge_kernel, (B * Hk,), merge_consts, num_warps=4)
    plan.launcher = plan.launcher or plan.split_launcher  # the split kernel's launch, whichever merge it ends in
    if splits == 1:
        plan.merge_graph = plan.merge_eager = "inline"
    plan.merge_ints = (Hk, splits, Hq * D, D)
    # out is allocated contiguous: [B, Hq, D] strides (Hq D, D) whatever q's rank
    table_stride = table.stride(0)
    plan.ints = (
        Hk, k.shape[2], splits, chunk, sm_scale * LOG2E,
        q3.stride(0), q3.stride(1),
        k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2),
        table_stride, Hq * D, D,
    )  # fmt: skip
    return plan


def _run(
    plan: _Plan, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lens: torch.Tensor, table: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    dev = q.device
    out = torch.empty_strided(plan.out_shape, plan.out_strides, dtype=q.dtype, device=dev)
    lse = torch.empty_strided(plan.lse_shape, plan.lse_strides, dtype=torch.float32, device=dev)
    if plan.empty:
        return out, lse
    cq, ck, cv = plan.contig
    if cq:
        q = q.contiguous()
    if ck:
        k = k.contiguous()
    if cv:
        v = v.contiguous()
    if plan.ws_numel:
        cnt, ws = workspace(dev, plan.ws_counters, plan.ws_numel, torch.float32, "decode")
    else:
        cnt = ws = lse  # unused: one split writes out and lse itself
    if plan.desc_block is not None:
        D = q.shape[-1]
        k_desc = TensorDescriptor(k, [plan.rows, D], [D, 1], plan.desc_block)
        v_desc = TensorDescriptor(v, [plan.rows, D], [D, 1], plan.desc_block)
    else:
        k_desc, v_desc = k, v
    mode = plan.merge_eager
    if plan.merge_graph != mode and q.is_cuda and torch.cuda.is_current_stream_capturing():
        mode = plan.merge_graph  # inside a capture the second launch costs the host nothing per replay
    if mode == "launch":
        assert plan.split_launcher is not None and plan.merge_launcher is not None  # built for a "launch" placement
        plan.split_launcher(q, k, v, k_desc, v_desc, lens, table, out, lse, ws, cnt, *plan.ints)
        plan.merge_launcher(ws, out, lse, *plan.merge_ints)
    else:
        assert plan.launcher is not None  # built for an "inline" placement (and for one split)
        plan.launcher(q, k, v, k_desc, v_desc, lens, table, out, lse, ws, cnt, *plan.ints)
    return out, lse


# Launch plans by call signature: q, the caches, the block table and device-side lengths (shapes, strides,
# dtypes, devices, alignment), the longest sequence when the lengths are on the host, and the options.
_PLANS = PlanCache()


def decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    seq_lens: torch.Tensor | Sequence[int],
    *,
    scale: float | None = None,
    block_table: torch.Tensor | None = None,
    num_splits: int | None = None,
    max_seq_len: int | None = None,
    tile: tuple[int, int, int] | None = None,
    max_chunk: int | None = None,
    use_desc: bool | None = None,
    merge: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of one new query per sequence over its first seq_lens[b] cached keys.

    q: [B, Hq, D] or [B, Hq, 1, D]; k_cache, v_cache: [B, Hkv, L_cache, D] (or, with
    `block_table` [B, max_pages], [num_pages, Hkv, page_size, D]); seq_lens: [B] ints, a list
    or a tensor (CPU or the cache's device; on the device, the plan uses L_cache or
    `max_seq_len` so nothing waits for the GPU). Length 0 gives out 0 and lse -inf.
    Returns (out shaped like q in q's dtype, lse [B, Hq] fp32, natural log).
    `num_splits`, `tile` (BLOCK_N, warps, stages), `max_chunk`, `use_desc` (TMA descriptors for
    the key tiles) and `merge` ("inline" or "launch", see `merge_placement`) override the plan (sweeps). Lengths on the device cost the host least: host lengths
    are checked and copied to the device every call.
    """
    sig: tuple[Any, ...] | None
    key: tuple[Any, ...] | None
    plan: _Plan | None
    key = plan = None
    try:
        sig = (
            q.shape, q.stride(), q.dtype, q.device, q.data_ptr() % 16 == 0,
            k_cache.shape, k_cache.stride(), k_cache.dtype, k_cache.device, k_cache.data_ptr() % 16 == 0,
            v_cache.shape, v_cache.stride(), v_cache.dtype, v_cache.device, v_cache.data_ptr() % 16 == 0,
            None if block_table is None else signature(block_table),
            scale, type(scale), num_splits, max_seq_len, tile, max_chunk, use_desc, merge,
        )  # fmt: skip
        if isinstance(seq_lens, torch.Tensor) and seq_lens.device.type != "cpu":
            # the fast path: nothing about the lengths is read on the host (one hash of the key: ~1 us)
            key = (sig, seq_lens.shape, seq_lens.dtype, seq_lens.device, seq_lens.data_ptr() % 16 == 0)
            plan = _PLANS.get(key)
        else:
            hash(sig)
    except (AttributeError, TypeError):  # not tensors, or an unhashable option: the checks refuse it
        sig = key = plan = None
    if plan is not None:
        assert isinstance(seq_lens, torch.Tensor)  # a plan is looked up first only for lengths on the device
        lens = seq_lens if seq_lens.dtype == torch.int32 else seq_lens.to(torch.int32)
        if block_table is None:
            return _run(plan, q, k_cache, v_cache, lens, lens)
        table = block_table if block_table.dtype == torch.int32 else block_table.to(torch.int32)
        return _run(plan, q, k_cache, v_cache, lens, table)
    if sig is None or sig not in _CHECKED:
        _check(q, k_cache, v_cache, block_table, scale)
    B = q.shape[0]
    lens, host_max, _host = _as_lens(seq_lens, B, q.device)
    capacity = k_cache.shape[2] if block_table is None else block_table.shape[1] * k_cache.shape[2]
    if host_max is not None:
        assert _host is not None  # known with host_max
        require(
            all(0 <= x <= capacity for x in _host),
            f"seq_lens must lie in [0, {capacity}] (the cache holds {capacity} keys), got {_host}"
            if B <= 16
            else f"seq_lens must lie in [0, {capacity}] (the cache holds {capacity} keys), got min {min(_host)} "
            f"max {max(_host)}",
        )
        key = (sig, "host", host_max) if sig is not None else None
    max_len = host_max if host_max is not None else min(max_seq_len or capacity, capacity)
    table = lens if block_table is None else block_table.to(torch.int32)
    plan = _PLANS.get(key) if key is not None else None
    if plan is None:
        plan = _make_plan(q, k_cache, v_cache, table, block_table is not None, scale, num_splits, max_len, tile,
                          max_chunk, use_desc, merge)  # fmt: skip
        if key is not None:
            _PLANS.put(key, plan)
            assert sig is not None  # a key holds the signature
            _CHECKED.add(sig)
    return _run(plan, q, k_cache, v_cache, lens, table)


# Signatures whose tensors passed `_check` (host-side lengths are still checked every call).
_CHECKED: set[tuple[Any, ...]] = set()


__all__ = [
    "DECODE_SMEM",
    "DECODE_TILE",
    "MAX_CHUNK",
    "MERGE_FLOATS",
    "MERGE_STAGES",
    "USE_DESC",
    "advised_plan",
    "choose_splits",
    "decode_attention",
    "default_tile",
    "merge_placement",
]

_ = InputError  # raised through `require`

check_decode_attention = _check  # public: tilewise.kernels.custom_ops runs it in the fake impls
