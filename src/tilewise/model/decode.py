"""Decode: one new token per sequence, so the GEMM's M is the batch, and MMA fragments pad.

A Tensor-Core fragment (mma.sync m16) has 16 rows; at batch 1 only 1 of 16 carries
data (6.25%), at batch 64 all do. wgmma's M is 64, so on Hopper the padding is coarser.

The common conclusion (batch 64 fills the Tensor Cores) needs a correction, made here by computation: full fragments are
not full Tensor Cores. At batch 64 a bf16 GEMM [64, K] x [K, N] does 2 x 64 x K x N FLOPs
for about 2 x K x N bytes of weights: ~64 FLOP/B, still far below the H100's balance of
~295 FLOP/B (and the H200's ~206), so it stays memory-bound (`decode_gemm_roofline`).

Decode attention is memory-bound no matter what: each cached K/V byte
serves only the query heads of one GQA group, so the intensity is about the group size.
The goal becomes saturating HBM, e.g. by splitting the KV sequence over more SMs
(`choose_num_splits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, positive_int, shown, typed
from tilewise.model import roofline as _roofline
from tilewise.model import traffic
from tilewise.util import cdiv, json_safe

MMA_M = {"mma": 16, "wmma": 16, "mma.sync": 16, "wgmma": 64}

# The split-KV rule's two knobs (see `choose_num_splits`).
MIN_BLOCKS_PER_SPLIT = 4  # a split streams at least 4 KV blocks, so its fixed costs stay small
SPLIT_TOLERANCE = 0.95  # take the fewest splits within 95% of the best wave efficiency


@typed
def fragment_fill(m: int, granularity: int = 16) -> float:
    """Share of the rows of the MMA fragments covering m rows that carry data."""
    m = positive_int("m", m)
    granularity = positive_int("granularity", granularity)
    padded = cdiv(m, granularity) * granularity
    return m / padded


@typed
def mma_granularity(instruction: str) -> int:
    """Rows (M) of one MMA: 16 for mma.sync / wmma, 64 for Hopper's wgmma."""
    key = str(instruction).lower()
    if key not in MMA_M:
        raise InputError(f"instruction must be one of {sorted(MMA_M)}, got {shown(instruction)}")
    return MMA_M[key]


# ------------------------------------------------------------------ split-KV


@dataclass(frozen=True)
class SplitCandidate:
    splits: int
    work_items: int  # batch x kv_heads x splits
    blocks_per_split: int  # ceil(kv_blocks / splits): the longest split
    rounds: int  # ceil(work_items / sms)
    efficiency: float  # useful KV-block loads / (rounds x sms x blocks_per_split)

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@dataclass(frozen=True)
class SplitPlan:
    batch: int
    kv_heads: int
    seq_len: int
    sms: int
    block_n: int
    kv_blocks: int
    max_splits: int  # the cap after MIN_BLOCKS_PER_SPLIT
    splits: int
    efficiency: float
    best_efficiency: float
    candidates: tuple[SplitCandidate, ...]
    rule: str

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["candidates"] = [c.to_dict() for c in self.candidates]
        return json_safe(d)


@typed
def split_candidate(batch: int, kv_heads: int, kv_blocks: int, sms: int, splits: int) -> SplitCandidate:
    """Wave efficiency of one split count: the time is rounds x (blocks of the longest split)."""
    items = batch * kv_heads * splits
    per_split = cdiv(kv_blocks, splits)
    rounds = cdiv(items, sms)
    eff = (batch * kv_heads * kv_blocks) / (rounds * sms * per_split)
    return SplitCandidate(splits, items, per_split, rounds, eff)


@typed
def split_plan(batch: int, kv_heads: int, seq_len: int, sms: int, block_n: int = 64, max_splits: int = 64) -> SplitPlan:
    """Every split count considered by `choose_num_splits`, and the one it takes."""
    batch = positive_int("batch", batch)
    kv_heads = positive_int("kv_heads", kv_heads)
    seq_len = positive_int("seq_len", seq_len)
    sms = positive_int("sms", sms)
    block_n = positive_int("block_n", block_n)
    max_splits = positive_int("max_splits", max_splits)
    kv_blocks = cdiv(seq_len, block_n)
    cap = max(1, min(max_splits, kv_blocks // MIN_BLOCKS_PER_SPLIT))
    cands = tuple(split_candidate(batch, kv_heads, kv_blocks, sms, s) for s in range(1, cap + 1))
    best = max(c.efficiency for c in cands)
    chosen = next(c for c in cands if c.efficiency >= SPLIT_TOLERANCE * best - 1e-12)
    rule = (
        f"work items = batch x kv_heads x splits; time ~ ceil(items / {sms} SMs) x ceil({kv_blocks} KV blocks / splits); "
        f"splits from 1 to {cap} (each split keeps >= {MIN_BLOCKS_PER_SPLIT} blocks, at most {max_splits}); "
        f"take the fewest within {SPLIT_TOLERANCE:.0%} of the best efficiency"
    )
    return SplitPlan(
        batch=batch,
        kv_heads=kv_heads,
        seq_len=seq_len,
        sms=sms,
        block_n=block_n,
        kv_blocks=kv_blocks,
        max_splits=cap,
        splits=chosen.splits,
        efficiency=chosen.efficiency,
        best_efficiency=best,
        candidates=cands,
        rule=rule,
    )


@typed
def choose_num_splits(
    batch: int, kv_heads: int, seq_len: int, sms: int, block_n: int = 64, max_splits: int = 64
) -> int:
    """Split-KV count for decode attention, chosen by wave efficiency.

    One work item is (sequence, KV head, split): it streams ceil(seq_len / block_n) / splits
    KV blocks and serves every query head of its GQA group. With `items = batch x kv_heads x
    splits` items on `sms` SMs (one at a time per SM), the kernel takes ceil(items / sms)
    rounds of ceil(kv_blocks / splits) block loads; the efficiency of a split count is the
    useful block loads over that (rounds x sms x blocks per split).

    The rule: consider splits = 1 .. min(max_splits, kv_blocks // 4) (a split keeps at least
    4 KV blocks, so its launch, partial-output write and merge stay small); take the fewest
    splits whose efficiency is within 95% of the best. Enough (batch x kv_heads) already
    fills the SMs -> 1; one long sequence with few KV heads -> many splits.

        >>> choose_num_splits(1, 8, 32768, 132)   # 8 items would leave 124 SMs idle
        16
        >>> choose_num_splits(128, 8, 4096, 132)  # 1024 items: 7.76 waves already
        1
    """
    return split_plan(batch, kv_heads, seq_len, sms, block_n, max_splits).splits


# ------------------------------------------------------------------ decode GEMM roofline


@dataclass(frozen=True)
class DecodeGemmPoint:
    batch: int
    k: int
    n: int
    dtype: str
    gpu: str
    flops: int
    bytes: int
    intensity: float  # FLOP per HBM byte
    balance: float
    bound: str
    time_s: float
    tensor_utilisation: float  # compute time / roofline time: how busy the Tensor Cores can be
    fill_mma: float  # rows of the 16-row mma.sync fragments that carry data
    fill_wgmma: float  # rows of the 64-row wgmma that carry data
    achieved_tflops: float  # useful FLOP/s at the roofline time

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def decode_gemm_point(
    batch: int, k: int, n: int, dtype: str = "bf16", gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU
) -> DecodeGemmPoint:
    """Roofline of the decode GEMM [batch, k] x [k, n] (weights read once from HBM)."""
    batch, k, n = positive_int("batch", batch), positive_int("k", k), positive_int("n", n)
    g = _gpus.get(gpu)
    flops = traffic.gemm_flops(batch, n, k)
    nbytes = traffic.gemm_bytes(batch, n, k, dtype)
    rf = _roofline.time(g, flops, nbytes, dtype)
    return DecodeGemmPoint(
        batch=batch,
        k=k,
        n=n,
        dtype=_gpus.dtype_name(dtype),
        gpu=g.key,
        flops=flops,
        bytes=nbytes,
        intensity=rf.intensity,
        balance=rf.balance,
        bound=rf.bound,
        time_s=rf.time_s,
        tensor_utilisation=rf.compute_s / rf.time_s,
        fill_mma=fragment_fill(batch, 16),
        fill_wgmma=fragment_fill(batch, 64),
        achieved_tflops=flops / rf.time_s / 1e12,
    )


@typed
def decode_gemm_roofline(
    k: int = 8192,
    n: int = 24576,
    batches: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
    dtype: str = "bf16",
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
) -> list[DecodeGemmPoint]:
    """The decode GEMM's roofline at each batch: intensity grows about linearly with batch.

    Default: an LLM projection, [batch, 8192] x [8192, 24576]. At batch 64 in bf16 the
    intensity is ~63 FLOP/B against a balance of ~295 on an H100 SXM: memory-bound.
    """
    return [decode_gemm_point(b, k, n, dtype, gpu) for b in batches]


@typed
def batch_for_compute_bound(
    k: int, n: int, dtype: str = "bf16", gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU
) -> int | None:
    """Smallest batch at which the decode GEMM reaches the machine balance (None if never)."""
    k, n = positive_int("k", k), positive_int("n", n)
    g = _gpus.get(gpu)
    bal = _gpus.balance(g, "hbm", dtype)
    lo, hi = 1, 1
    while traffic.gemm_flops(hi, n, k) / traffic.gemm_bytes(hi, n, k, dtype) < bal:
        hi *= 2
        if hi > 1 << 24:
            return None
    while lo < hi:  # intensity grows with batch: binary search for the first batch at balance
        mid = (lo + hi) // 2
        if traffic.gemm_flops(mid, n, k) / traffic.gemm_bytes(mid, n, k, dtype) >= bal:
            hi = mid
        else:
            lo = mid + 1
    return lo


# ------------------------------------------------------------------ decode attention


@dataclass(frozen=True)
class DecodeAttention:
    batch: int
    heads: int
    kv_heads: int
    group: int  # query heads per KV head (GQA group size): the M of each KV byte
    seq_len: int
    head_dim: int
    dtype: str
    gpu: str
    flops: int
    bytes: int
    kv_bytes: int
    intensity: float
    balance: float
    bound: str
    time_s: float
    bandwidth_time_s: float  # all bytes at the HBM bandwidth
    tensor_utilisation: float
    fill_mma: float  # group rows in a 16-row fragment
    fill_wgmma: float  # group rows in wgmma's 64

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def decode_attention(
    batch: int,
    heads: int,
    kv_heads: int,
    seq_len: int,
    head_dim: int = 128,
    dtype: str = "bf16",
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
) -> DecodeAttention:
    """One decode step of attention: every cached K/V byte read once, serving one GQA group.

    FLOPs 4 x heads x head_dim x seq_len per sequence; bytes mostly the K/V cache,
    2 x kv_heads x seq_len x head_dim elements. Intensity ~ heads / kv_heads (bf16): the
    group size, far below any balance point, so the time is bytes / HBM bandwidth.
    """
    batch, heads, kv_heads = (
        positive_int("batch", batch),
        positive_int("heads", heads),
        positive_int("kv_heads", kv_heads),
    )
    seq_len, head_dim = positive_int("seq_len", seq_len), positive_int("head_dim", head_dim)
    if heads % kv_heads:
        raise InputError(f"heads must be a multiple of kv_heads (GQA), got heads={heads}, kv_heads={kv_heads}")
    g = _gpus.get(gpu)
    # Every sequence has the same length and both counts are sums over sequences: count one and
    # multiply, so the time does not grow with the batch (a list of 10^8 lengths took 17 s).
    flops = traffic.decode_flops([seq_len], heads, head_dim) * batch
    nbytes = traffic.decode_bytes([seq_len], heads, kv_heads, head_dim, dtype) * batch
    kv = traffic.kv_cache_bytes([seq_len], kv_heads, head_dim, dtype) * batch
    rf = _roofline.time(g, flops, nbytes, dtype)
    group = heads // kv_heads
    return DecodeAttention(
        batch=batch,
        heads=heads,
        kv_heads=kv_heads,
        group=group,
        seq_len=seq_len,
        head_dim=head_dim,
        dtype=_gpus.dtype_name(dtype),
        gpu=g.key,
        flops=flops,
        bytes=nbytes,
        kv_bytes=kv,
        intensity=rf.intensity,
        balance=rf.balance,
        bound=rf.bound,
        time_s=rf.time_s,
        bandwidth_time_s=rf.memory_s,
        tensor_utilisation=rf.compute_s / rf.time_s,
        fill_mma=fragment_fill(group, 16),
        fill_wgmma=fragment_fill(group, 64),
    )


__all__ = [
    "MMA_M",
    "DecodeAttention",
    "DecodeGemmPoint",
    "SplitCandidate",
    "SplitPlan",
    "batch_for_compute_bound",
    "choose_num_splits",
    "decode_attention",
    "decode_gemm_point",
    "decode_gemm_roofline",
    "fragment_fill",
    "mma_granularity",
    "split_plan",
]
