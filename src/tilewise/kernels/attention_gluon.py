"""FlashAttention-3's forward for Hopper (sm_90a) in Gluon: TMA producer, S-stage ring, two consumers in ping-pong.

    out, lse = gluon_attention(q, k, v, causal=True)   # q [B, H, Sq, D], k/v [B, Hkv, Sk, D]; H200 only

FA3's design, one partition per role (`gl.warp_specialize`):

* producer (1 warp, 24 registers): issues the TMA loads. Per CTA tile (128 query rows) it loads Q
  once per consumer (64 rows each, into the consumer's own buffer, "q_full"/"q_empty" barriers), then
  streams the K and V tiles of the key range into an S-stage ring; stage s has "k_full", "v_full"
  (the copy engine completes them, `expect` counts the bytes), "k_empty" and "v_empty" (each
  consumer arrives once when it is done with that tile, so the count is the number of consumers;
  K is released right after Q K^T, so the next K streams in while the softmax and P V run).
* consumers (4 warps = one warpgroup each, 64 query rows = one wgmma M): S = Q K^T as an SS wgmma
  (both operands in shared memory), the online softmax in exp2 with the row max and sum in
  registers, O += P V as an RS wgmma (P converted in registers to the A-operand layout, never
  written to shared memory). Intra-warpgroup overlap: S_j = Q K_j^T and O += P_{j-1} V_{j-1} are
  issued together, the softmax of S_j runs while P_{j-1} V_{j-1} is still on the Tensor Cores.
* ping-pong: two mbarriers ("turn") order the consumers' GEMM blocks c0, c1, c0, c1, ...: consumer c
  waits for its turn, issues its wgmmas, hands the turn over, then does its softmax, which thus
  overlaps the other consumer's GEMMs (while one runs its softmax, the other runs its GEMM, so the
  Tensor Cores do not idle during softmax).
* persistent grid: one CTA per SM walks the tiles t = pid, pid + grid, ...; tiles are ordered in
  groups of heads whose K/V fit in L2 together, and inside a group the longest query tiles
  (most keys under a causal mask) first, so the short tiles fill the tail. Causal problems that
  order leaves unbalanced follow a host-built table instead (`lpt_schedule`: each tile, in the same
  order, to the CTA with the least work so far; `shape_config` decides per problem).

The same code builds the two simpler designs (`DESIGNS`):
  (a) "serial": one consumer (8 warps, 128 rows in one instruction stream), a ring of 1 stage:
      the next K/V tile is loaded only after the last one is released: load, then compute.
  (b) "ring": the same single consumer over an S-stage ring: loads hide, softmax does not.
  (c) "pingpong": 1 producer + 2 consumers in ping-pong over the S-stage ring (FA3).

Causal masking is aligned at the bottom right (query i sees keys j <= i + Sk - Sq) like
`tilewise.kernels.flash_attention`; rows that see no key get out 0 and lse -inf. Q, K and V
are read through 4-D TMA descriptors ([B, H, S, D], any 16-byte-aligned strides), so a tile that
runs past the end of a head reads zeros, never the next head.

This module imports without a GPU; `gluon_available()` says whether the installed Triton has
the Gluon API this file was written against (checked by name), and `GLUON_VERIFIED` lists the
Triton versions on which the GPU tests passed; `tilewise.kernels.attention` dispatches here only
for those (see `use_gluon`).
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import math
import os
import re
import subprocess
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tilewise.errors import InputError
from tilewise.model.tensorcore import register_budget, setmaxnreg_split, smem_budget
from tilewise.util import cdiv

if TYPE_CHECKING:
    import torch

try:
    import triton
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_wait,
    )

    _IMPORT_ERROR = None
except Exception as exc:
    _IMPORT_ERROR = exc

# Triton versions on which tests/gpu/test_gpu_attention_gluon.py passed on an H200 (the dispatch
# enables the Gluon kernel only for these: a version it never ran on falls back to the Triton kernel).
GLUON_VERIFIED: tuple[str, ...] = ("3.6.0",)  # H200, 2026-12-01: 127/127 float64 checks (attention_fa3_check.jsonl)

DESIGNS = ("serial", "ring", "pingpong")
LOG2E = 1.4426950408889634
ROWS_PER_CTA = 128  # two wgmma M = 64 row blocks
HEAD_DIMS = (64, 128, 256)  # the kernel builds and passes its GPU tests for these
# The dispatch takes it only where it measured faster than the Triton kernel (H200, bf16, 2026-12-01,
# benchmarks/results/h200/attention_fa3.json, CUDA graphs): D 128 1.20-1.35x on 9 of 10 shapes (0.96x at
# B1 H16 S32768 causal; 1.11x in the earlier run), D 256 1.10x. D 64 with two consumers measured 0.86-1.00x of
# the Triton kernel; with three (`shape_consumers`) and no turn order it leads where `D64_MIN_KEYS` says.
DISPATCH_HEAD_DIMS = (64, 128, 256)
# D 64 runs the Gluon kernel from this many keys (non-causal, causal). H200, bf16, CUDA graphs, against cuDNN
# (benchmarks/results/h200/attention_fwd_variants.json): non-causal S 512 0.85x (Triton 0.81x), S 2048 0.96x
# (0.91x), S 8192 1.05x (0.93x); causal S 512-2048 0.69-0.87x against Triton's 0.74-0.89x, S 8192 0.99x (0.92x).
# Causal S 4096 (attention_sweep.json at 2ea9db1, two consumers): 390 / 394 TFLOP/s fp16 / bf16 against the
# Triton kernel's 371 / 382, and 385 against 382 with GQA 32/8.
D64_MIN_KEYS = {False: 0, True: 4096}


def gluon_available() -> bool:
    """True when the installed Triton has every Gluon name this kernel uses."""
    if _IMPORT_ERROR is not None:
        return False
    need = (
        (gl, "warp_specialize"),
        (gl, "NVMMADistributedLayout"),
        (gl, "DotOperandLayout"),
        (gl, "NVMMASharedLayout"),
        (gl, "allocate_shared_memory"),
        (mbarrier, "MBarrierLayout"),
        (mbarrier, "expect"),
        (tma, "async_copy_global_to_shared"),
    )
    return all(hasattr(mod, name) for mod, name in need)


# ------------------------------------------------------------------------ config choice


@dataclass(frozen=True)
class GluonConfig:
    design: str  # "serial" | "ring" | "pingpong"
    head_dim: int
    block_n: int
    stages: int
    consumers: int  # consumer partitions (2 in ping-pong, 1 otherwise)
    consumer_warps: int  # warps per consumer partition (4 = one warpgroup, 8 = two in lockstep)
    rows_per_consumer: int
    overlap: bool  # issue S_j = QK_j^T with P_{j-1} V_{j-1} (FA3's intra-warpgroup overlap)
    pingpong: bool
    producer_regs: int
    consumer_regs: int
    reason: str = ""
    q_late: bool = True  # request the first K/V tile of a CTA tile before its Q (see _producer)
    snake: bool = True  # mirror the tile order every other round (see _tile_at)
    lpt: bool = True  # causal: CTAs follow the host's longest-first table (`lpt_schedule`), not every grid-th tile
    q_bufs: int = 1  # Q buffers per consumer: 2 loads the next CTA tile's Q while this one's last K/V tiles run
    xtile: bool = False  # overlap across CTA tiles: a tile's last P V with the next one's first Q K^T (ping-pong)
    store_bytes: int = (
        16  # bytes of O a thread stores at once: 4 (the wgmma layout), 8 or 16 (`_epilogue`, STORE_BYTES)
    )

    @property
    def rows_per_cta(self) -> int:
        """Query rows of one CTA tile: the consumers' 64-row blocks side by side (128 in one 8-warp consumer)."""
        return self.consumers * self.rows_per_consumer


# Block N per head dim. N = 128 makes each wgmma's compute/shared-memory-feed ratio 1.33
# (0.5 N / (16 + 0.25 N), tensorcore.smem_feed); at D = 256 the 64-row O accumulator is already
# 128 fp32 registers per thread, so N = 64 (S 32 registers) keeps a consumer under the 240 the
# register split gives it (model.tensorcore.register_budget checks it below).
_BLOCK_N = {64: 128, 128: 128, 256: 64}
# Shared memory kept free of the ring for barriers and the compiler's layout-conversion scratch.
_SMEM_RESERVE = 2 * 1024  # the compiled kernels use 344 B beyond Q and the ring (sm_90a, triton 3.6)
_MAX_STAGES = 4
# The 16-byte O store (`_epilogue`) moves O through 512 bytes of shared memory a consumer warp (sm_90a, triton 3.6),
# kept out of the ring like the reserve above. At D 128 that costs the third K/V stage, and the trade wins: H200,
# bf16, FA3's grid, CUDA graphs beside cuDNN, two runs (benchmarks/results/h200/attention_fwd_store.json), 2 stages
# with the 16-byte store against 3 with the 8-byte one: S 512 +15-18%, 1k +8-16%, 2k +5-18%, 4k +1-4%, 16k -0.4 to
# +0.3%; 2 stages with the 8-byte store ran within 1% of 3. At D 64 / D 256 (room to spare / 2 stages either way)
# the 16-byte store against the wgmma layout's 4-byte pairs: D 256 S 512 +20-25%, 1k +12-18%, 4k +3-5%; D 64
# S 512 +9.5%, 2k +2.4%, 16k +0.2%.
_STORE_SCRATCH_PER_WARP = 512
STORE_BYTES = 16
# Consumer warpgroups per head dim in ping-pong. Each takes 64 query rows; three let two softmaxes run while
# one consumer's GEMMs occupy the Tensor Cores, which D 64 needs (its GEMMs per K/V tile are half D 128's for
# the same softmax work); they leave 160 registers a thread, too few above D 64.
CONSUMERS = {64: 2, 128: 2, 256: 2}
# Scheduling defaults (benchmarks/attention_fa3.py --variants measures each against its alternative).
Q_LATE = True
SNAKE = True
LPT = True
L2_FRACTION = 0.4  # of the 60 MiB L2: the K/V of one head group (0.4 -> 12 heads at S 4096, D 128, bf16)


@functools.lru_cache(maxsize=64)
def gluon_config(
    head_dim: int,
    design: str = "pingpong",
    dtype: str = "bf16",
    q_late: bool | None = None,
    snake: bool | None = None,
    lpt: bool | None = None,
    consumers: int | None = None,
    q_bufs: int = 1,
    xtile: bool = False,
) -> GluonConfig:
    """Tile, ring depth and register split for one design, from `tilewise.model.tensorcore`.

    `consumers` (ping-pong only): 2 or 3 warpgroups of 64 query rows taking turns on the Tensor Cores
    (default `CONSUMERS[head_dim]`); `q_bufs`: Q buffers per consumer (1 or 2); `xtile` (ping-pong only): the
    overlapped loop run across CTA tiles (`_consumer_xtile`).
    """
    if design not in DESIGNS:
        raise InputError(f"design must be one of {list(DESIGNS)}, got {design!r}")
    if head_dim not in _BLOCK_N:
        raise InputError(f"head_dim must be one of {sorted(_BLOCK_N)}, got {head_dim!r}")
    if q_bufs not in (1, 2):
        raise InputError(f"q_bufs must be 1 or 2, got {q_bufs!r}")
    if xtile and design != "pingpong":
        raise InputError(f"xtile runs the ping-pong design's overlapped loop, got design {design!r}")
    bn = _BLOCK_N[head_dim]
    two = design == "pingpong"
    if not two:
        if consumers not in (None, 1):
            raise InputError(f"design {design!r} has one consumer, got consumers={consumers!r}")
        consumers = 1
    elif consumers is None:
        consumers = CONSUMERS[head_dim]
    elif consumers not in (2, 3):
        raise InputError(f"consumers must be 2 or 3 in ping-pong, got {consumers!r}")
    rows = ROWS_PER_CTA // consumers if not two else 64
    # 1 producer warp + the consumers; setmaxnreg works per warpgroup, so the producer's warp is
    # counted as a warpgroup: 65,536 - 128 x 24 over 2 x 128 threads = 244 -> 240 (multiple of 8);
    # over 3 x 128 threads = 162 -> 160.
    split = setmaxnreg_split(producers=1, consumers=max(2, consumers), producer_regs=24, gpu="h100-sxm")
    regs = register_budget(head_dim, bn, 64, dtype, "h100-sxm", limit=split["consumer_regs"])
    if consumers == 3 and not regs.fits:
        raise InputError(
            f"3 consumers leave {split['consumer_regs']} registers a thread; head_dim {head_dim} needs {regs.total:.0f}"
        )
    sm = smem_budget(head_dim, bn, rows, 1, dtype, "h100-sxm", consumers)
    q_bytes = sm.q_bytes * q_bufs
    store = store_scratch_bytes(consumers * (4 if two else 8))
    room = (sm.limit_bytes - _SMEM_RESERVE - store - q_bytes) // sm.kv_stage_bytes
    if design != "serial" and room < 2:
        raise InputError(f"{q_bufs} Q buffers at head_dim {head_dim} leave room for {room} K/V stages; 2 are needed")
    stages = 1 if design == "serial" else min(_MAX_STAGES, room)
    reason = (
        f"N={bn}: registers per consumer thread {regs.total:.0f} of {split['consumer_regs']} "
        f"(S {regs.s:.0f} + P {regs.p:.0f} + O {regs.o:.0f}); shared memory Q {q_bytes // 1024} KB + "
        f"{stages} x {sm.kv_stage_bytes // 1024} KB K/V stages of {sm.limit_bytes // 1024} KB "
        f"({_SMEM_RESERVE // 1024} KB kept for barriers and scratch, {store // 1024} KB for the {STORE_BYTES}-byte "
        f"O store)"
    )
    return GluonConfig(
        design=design,
        head_dim=head_dim,
        block_n=bn,
        stages=stages,
        consumers=consumers,
        consumer_warps=4 if two else 8,
        rows_per_consumer=rows,
        overlap=two,
        pingpong=two,
        producer_regs=split["producer_regs"],
        consumer_regs=split["consumer_regs"],
        reason=reason,
        q_late=Q_LATE if q_late is None else bool(q_late),
        snake=SNAKE if snake is None else bool(snake),
        lpt=LPT if lpt is None else bool(lpt),
        q_bufs=q_bufs,
        xtile=bool(xtile),
        store_bytes=STORE_BYTES,
    )


def store_scratch_bytes(consumer_warps: int, store_bytes: int = STORE_BYTES) -> int:
    """Shared memory the epilogue's O store takes beyond Q and the ring: 512 B a consumer warp for the 16-byte
    store's stmatrix round trip, none for the 8- and 4-byte ones (registers and shuffles only)."""
    return consumer_warps * _STORE_SCRATCH_PER_WARP if store_bytes == 16 else 0


# ------------------------------------------------------------------------------ kernel

if _IMPORT_ERROR is None:

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _tile_info(t, num_bh, num_m, group, seq_q, seq_k, BLOCK_Q: gl.constexpr, BLOCK_N: gl.constexpr,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                   CAUSAL: gl.constexpr):  # fmt: skip
        """Tile t of the persistent order -> (b*h index, first query row, keys to visit, key tiles).

        Heads come in groups of `group` (their K/V fit in L2 together); inside a group the query
        tiles run last-first (under a causal mask the last tile has the most keys), head minor.
        """
        per_group = group * num_m
        g = t // per_group
        base = g * group
        gs = gl.minimum(num_bh - base, group)
        r = t - g * per_group
        m_blk = num_m - 1 - r // gs
        bh = base + r % gs
        m0 = m_blk * BLOCK_Q
        n_keys = seq_k
        if CAUSAL:
            n_keys = gl.minimum(gl.maximum(m0 + BLOCK_Q + seq_k - seq_q, 0), seq_k)
        n_tiles = (n_keys + BLOCK_N - 1) // BLOCK_N
        return bh, m0, n_keys, n_tiles

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _tile_at(r, pid, nprog, total, snake):  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
        """Round r of CTA pid: tile r * grid + pid, or, with `snake`, the mirrored slot in odd full rounds.

        The tiles are sorted longest first inside a head group, so mirroring every other round gives the
        CTA that drew the longest tile of one round the shortest of the next (causal load balance).
        """
        t = r * nprog + pid
        if (snake != 0) & (r % 2 == 1) & ((r + 1) * nprog <= total):
            t = r * nprog + nprog - 1 - pid
        return t

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _tile_count(sched_ptr, pid, nprog, total, TABLE: gl.constexpr):  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
        """Tiles CTA pid runs: every grid-th one, or (TABLE) its segment of the host's schedule (`lpt_schedule`)."""
        n = (total - pid + nprog - 1) // nprog
        if TABLE:
            n = gl.load(sched_ptr + pid + 1) - gl.load(sched_ptr + pid)
        return n

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _tile_id(sched_ptr, r, pid, nprog, total, snake, TABLE: gl.constexpr):  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
        """The r-th tile of CTA pid: `_tile_at`, or (TABLE) entry r of its segment of the schedule."""
        if TABLE:
            t = gl.load(sched_ptr + nprog + 1 + gl.load(sched_ptr + pid) + r)
        else:
            t = _tile_at(r, pid, nprog, total, snake)
        return t

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _load_q(q_desc, q_smem, q_full, q_empty, b, h, m0, tile_count, BLOCK_M: gl.constexpr,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                CONSUMERS: gl.constexpr, Q_BUFS: gl.constexpr):  # fmt: skip
        qb = (tile_count % Q_BUFS) * CONSUMERS
        for c in gl.static_range(CONSUMERS):
            # the consumer arrives on q_empty after its last Q K^T of the tile that last used this buffer
            mbarrier.wait(q_empty.index(qb + c), ((tile_count // Q_BUFS) & 1) ^ 1)
            mbarrier.expect(q_full.index(qb + c), q_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(q_desc, [b, h, m0 + c * BLOCK_M, 0], q_full.index(qb + c),
                                            q_smem.index(qb + c))  # fmt: skip

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _producer(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                  num_heads, num_kv_heads, seq_q, seq_k, num_m, group, total, snake, sched_ptr,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
                  CONSUMERS: gl.constexpr, Q_LATE: gl.constexpr, CAUSAL: gl.constexpr,
                  TABLE: gl.constexpr, Q_BUFS: gl.constexpr):  # fmt: skip
        pid = gl.program_id(0)
        nprog = gl.num_programs(0)
        num_bh = total // num_m  # B * H
        kv_count = 0
        tile_count = 0
        for r in range(0, _tile_count(sched_ptr, pid, nprog, total, TABLE)):
            t = _tile_id(sched_ptr, r, pid, nprog, total, snake, TABLE)
            bh, m0, _n_keys, n_tiles = _tile_info(
                t, num_bh, num_m, group, seq_q, seq_k, BLOCK_M * CONSUMERS, BLOCK_N, CAUSAL
            )
            b = bh // num_heads
            h = bh % num_heads
            hk = h // (num_heads // num_kv_heads)
            # Q_LATE: the first K/V tile of this CTA tile is requested before Q, whose buffer frees only
            # at the previous tile's last Q K^T: the ring then refills across the tile boundary
            if Q_LATE:
                if n_tiles == 0:
                    _load_q(q_desc, q_smem, q_full, q_empty, b, h, m0, tile_count, BLOCK_M, CONSUMERS, Q_BUFS)
            else:
                _load_q(q_desc, q_smem, q_full, q_empty, b, h, m0, tile_count, BLOCK_M, CONSUMERS, Q_BUFS)
            for j in range(n_tiles):
                s = kv_count % STAGES
                ph = ((kv_count // STAGES) & 1) ^ 1
                mbarrier.wait(k_empty.index(s), ph)
                mbarrier.expect(k_full.index(s), k_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(k_desc, [b, hk, j * BLOCK_N, 0], k_full.index(s), k_smem.index(s))
                mbarrier.wait(v_empty.index(s), ph)
                mbarrier.expect(v_full.index(s), v_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(v_desc, [b, hk, j * BLOCK_N, 0], v_full.index(s), v_smem.index(s))
                if Q_LATE:
                    if j == 0:
                        _load_q(q_desc, q_smem, q_full, q_empty, b, h, m0, tile_count, BLOCK_M, CONSUMERS, Q_BUFS)
                kv_count += 1
            tile_count += 1

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _softmax_step(s, m_i, l_i, qk_scale, col0, rows, n_keys, causal_shift, MASKED: gl.constexpr,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                      CAUSAL: gl.constexpr, S_LAYOUT: gl.constexpr):  # fmt: skip
        """One key tile of the online softmax (log2 domain). Returns P (fp32), the new max, sum, alpha."""
        if MASKED:
            cols = col0 + gl.arange(0, s.shape[1], layout=gl.SliceLayout(0, S_LAYOUT))
            valid = gl.expand_dims(cols < n_keys, 0)
            if CAUSAL:
                valid = valid & (gl.expand_dims(cols, 0) <= gl.expand_dims(rows + causal_shift, 1))
            s = gl.where(valid, s * qk_scale, float("-inf"))
            m_new = gl.maximum(m_i, gl.max(s, 1))
            m_use = gl.where(m_new == float("-inf"), 0.0, m_new)  # a row with no key yet stays at 0
            p = gl.exp2(s - gl.expand_dims(m_use, 1))
        else:
            m_new = gl.maximum(m_i, gl.max(s, 1) * qk_scale)
            m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
            p = gl.exp2(s * qk_scale - gl.expand_dims(m_use, 1))  # one FMA per element
        alpha = gl.exp2(m_i - m_use)
        l_i = l_i * alpha + gl.sum(p, 1)
        return p, m_new, l_i, alpha

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _epilogue(acc, l_i, m_i, row0, bh, o_ptr, lse_ptr, stride_ob, stride_oh, stride_om, num_heads, seq_q,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                  BLOCK_M: gl.constexpr, HEAD_DIM: gl.constexpr, S_LAYOUT: gl.constexpr,
                  O_LAYOUT: gl.constexpr, STORE_BYTES: gl.constexpr):  # fmt: skip
        """A consumer's rows of one CTA tile: O / l and lse = (m + log2 l) ln 2; rows past Sq are not stored.

        STORE_BYTES: how O leaves the wgmma layout. There (4) a thread holds 2-element pairs 8 columns apart, so
        one store instruction writes 16 bytes of each of 8 rows, half of every 32-byte sector: 32 stores a thread
        at D 128. Nsight Compute at S 512 (B32 H16 D128): 50% excess sectors, and the consumers stalled on the
        store queue in 8-12% of their samples, against 1% at S 4096, where a CTA tile has 8x the keys. 16: each
        thread holds 8 contiguous elements of a row, 16 rows x 2 threads a warp, so one instruction fills 16
        whole sectors, 8 stores a thread. The warps keep their 16 rows; the compiler moves the values with
        stmatrix / ldmatrix through 512 bytes of shared memory a warp (sm_90a, triton 3.6; `store_scratch_bytes`
        keeps them out of the ring). 8: 4 elements a thread, moved by warp shuffles alone (16 stores a thread,
        half sectors; measured no faster than 4)."""
        row_s: gl.constexpr = gl.SliceLayout(1, S_LAYOUT)
        row_o: gl.constexpr = gl.SliceLayout(1, O_LAYOUT)
        b = bh // num_heads
        h = bh % num_heads
        l_o = gl.convert_layout(l_i, row_o)
        has_o = l_o > 0.0
        out = (acc * gl.expand_dims(1.0 / gl.where(has_o, l_o, 1.0), 1)).to(
            o_ptr.dtype.element_ty
        )  # 2 divisions a thread
        o_base = o_ptr + b.to(gl.int64) * stride_ob + h.to(gl.int64) * stride_oh
        if STORE_BYTES > 4:
            st_layout: gl.constexpr = gl.BlockedLayout(
                size_per_thread=[1, STORE_BYTES // 2],
                threads_per_warp=[16, 2],
                warps_per_cta=[BLOCK_M // 16, 1],
                order=[1, 0],
            )
            out = gl.convert_layout(out, st_layout)
            offs_m = row0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, st_layout))
            offs_d = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, st_layout))
        else:
            offs_m = row0 + gl.arange(0, BLOCK_M, layout=row_o)
            offs_d = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, O_LAYOUT))
        o_ptrs = o_base + gl.expand_dims(offs_m, 1) * stride_om + gl.expand_dims(offs_d, 0)
        o_mask = gl.expand_dims(offs_m < seq_q, 1) & gl.expand_dims(offs_d < HEAD_DIM, 0)
        gl.store(o_ptrs, out, mask=o_mask)
        rows = row0 + gl.arange(0, BLOCK_M, layout=row_s)
        has = l_i > 0.0
        lse = gl.where(has, (m_i + gl.log2(gl.where(has, l_i, 1.0))) * 0.6931471805599453, float("-inf"))
        gl.store(lse_ptr + bh.to(gl.int64) * seq_q + rows, lse, mask=rows < seq_q)

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _consumer(q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, turn,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                  o_ptr, lse_ptr, stride_ob, stride_oh, stride_om,
                  num_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale, sched_ptr,
                  C: gl.constexpr, HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                  STAGES: gl.constexpr, CONSUMERS: gl.constexpr, WARPS: gl.constexpr, OVERLAP: gl.constexpr,
                  PINGPONG: gl.constexpr, SPLIT_RELEASE: gl.constexpr, CAUSAL: gl.constexpr,
                  TABLE: gl.constexpr, Q_BUFS: gl.constexpr, NEXT: gl.constexpr, FIRST: gl.constexpr,
                  XTILE: gl.constexpr, STORE_BYTES: gl.constexpr):  # fmt: skip
        """A consumer partition: `_consumer_xtile` (XTILE) or `_consumer_tiles`. NEXT: the consumer whose turn
        follows this one's; FIRST: 1 for the consumer that starts (its first wait passes on the barrier's initial
        phase)."""
        if XTILE:
            _consumer_xtile(q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, turn,
                           o_ptr, lse_ptr, stride_ob, stride_oh, stride_om,
                           num_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale, sched_ptr,
                           C, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CONSUMERS, WARPS, OVERLAP, PINGPONG, SPLIT_RELEASE,
                           CAUSAL, TABLE, Q_BUFS, NEXT, FIRST, STORE_BYTES)  # fmt: skip
        else:
            _consumer_tiles(q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, turn,
                           o_ptr, lse_ptr, stride_ob, stride_oh, stride_om,
                           num_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale, sched_ptr,
                           C, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CONSUMERS, WARPS, OVERLAP, PINGPONG, SPLIT_RELEASE,
                           CAUSAL, TABLE, Q_BUFS, NEXT, FIRST, STORE_BYTES)  # fmt: skip

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _consumer_xtile(q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, turn,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                        o_ptr, lse_ptr, stride_ob, stride_oh, stride_om,
                        num_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale, sched_ptr,
                        C: gl.constexpr, HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                        STAGES: gl.constexpr, CONSUMERS: gl.constexpr, WARPS: gl.constexpr, OVERLAP: gl.constexpr,
                        PINGPONG: gl.constexpr, SPLIT_RELEASE: gl.constexpr, CAUSAL: gl.constexpr,
                        TABLE: gl.constexpr, Q_BUFS: gl.constexpr, NEXT: gl.constexpr, FIRST: gl.constexpr,
                        STORE_BYTES: gl.constexpr):  # fmt: skip
        """The overlapped loop run across CTA tiles: a tile's last P V is issued with the next tile's first Q K^T
        (whose Q the second buffer already holds), and its epilogue runs while that S is the next softmax's input,
        so a short tile no longer pays its first Q K^T and last P V alone. Tiles without keys keep the plain path."""
        dtype: gl.constexpr = q_smem.dtype
        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[WARPS, 1], instr_shape=[16, BLOCK_N, 16]
        )
        o_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[WARPS, 1], instr_shape=[16, HEAD_DIM, 16]
        )
        p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
        row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
        row_o: gl.constexpr = gl.SliceLayout(1, o_layout)
        BLOCK_Q: gl.constexpr = BLOCK_M * CONSUMERS

        pid = gl.program_id(0)
        nprog = gl.num_programs(0)
        num_bh = total // num_m  # B * H
        causal_shift = seq_k - seq_q
        kv_count = 0
        tile_count = 0
        turn_count = 0
        primed = 0  # 1: this tile's first Q K^T and softmax ran with the last tile's P V
        st = 0
        s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=s_layout)
        p_op = gl.convert_layout(s_zero.to(dtype), p_layout)
        m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=row_s)
        l_i = gl.full([BLOCK_M], 0.0, gl.float32, layout=row_s)
        acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=o_layout)
        count = _tile_count(sched_ptr, pid, nprog, total, TABLE)
        for r in range(0, count):
            t = _tile_id(sched_ptr, r, pid, nprog, total, snake, TABLE)
            bh, m0, n_keys, n_tiles = _tile_info(t, num_bh, num_m, group, seq_q, seq_k, BLOCK_Q, BLOCK_N, CAUSAL)
            row0 = m0 + C * BLOCK_M
            rows = row0 + gl.arange(0, BLOCK_M, layout=row_s)
            full_keys = n_keys
            if CAUSAL:
                full_keys = gl.minimum(gl.maximum(row0 + causal_shift + 1, 0), n_keys)
            full_tiles = full_keys // BLOCK_N
            qi = (tile_count % Q_BUFS) * CONSUMERS + C
            q_buf = q_smem.index(qi)
            if primed == 0:
                m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=row_s)
                l_i = gl.full([BLOCK_M], 0.0, gl.float32, layout=row_s)
                acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=o_layout)
                mbarrier.wait(q_full.index(qi), (tile_count // Q_BUFS) & 1)
                if n_tiles > 0:  # block 0: S_0 = Q K_0^T alone
                    st = kv_count % STAGES
                    mbarrier.wait(k_full.index(st), (kv_count // STAGES) & 1)
                    if PINGPONG:
                        mbarrier.wait(turn.index(C), (turn_count + FIRST) & 1)
                    s_tok = warpgroup_mma(q_buf, k_smem.index(st).permute((1, 0)), s_zero, use_acc=False,
                                          is_async=True)  # fmt: skip
                    if PINGPONG:
                        mbarrier.arrive(turn.index(NEXT))
                    turn_count += 1
                    s = warpgroup_mma_wait(0, deps=[s_tok])
                    mbarrier.arrive(k_empty.index(st))
                    if n_tiles == 1:
                        mbarrier.arrive(q_empty.index(qi))
                    if full_tiles > 0:
                        p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, qk_scale, 0, rows, n_keys, causal_shift,
                                                           False, CAUSAL, s_layout)  # fmt: skip
                    else:
                        p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, qk_scale, 0, rows, n_keys, causal_shift,
                                                           True, CAUSAL, s_layout)  # fmt: skip
                    p_op = gl.convert_layout(p.to(dtype), p_layout)
                else:
                    mbarrier.arrive(q_empty.index(qi))  # no key: Q is not read
            for j in range(1, n_tiles):  # the steady state: S_j = Q K_j^T with O += P_{j-1} V_{j-1}
                nt = (kv_count + 1) % STAGES
                mbarrier.wait(k_full.index(nt), ((kv_count + 1) // STAGES) & 1)
                mbarrier.wait(v_full.index(st), (kv_count // STAGES) & 1)
                if PINGPONG:
                    mbarrier.wait(turn.index(C), (turn_count + FIRST) & 1)
                s_tok = warpgroup_mma(q_buf, k_smem.index(nt).permute((1, 0)), s_zero, use_acc=False, is_async=True)
                o_tok = warpgroup_mma(p_op, v_smem.index(st), acc, is_async=True)
                if PINGPONG:
                    mbarrier.arrive(turn.index(NEXT))
                turn_count += 1
                s = warpgroup_mma_wait(1, deps=[s_tok])
                mbarrier.arrive(k_empty.index(nt))
                if j == n_tiles - 1:
                    mbarrier.arrive(q_empty.index(qi))
                if j < full_tiles:
                    p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, qk_scale, j * BLOCK_N, rows, n_keys, causal_shift,
                                                       False, CAUSAL, s_layout)  # fmt: skip
                else:
                    p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, qk_scale, j * BLOCK_N, rows, n_keys, causal_shift,
                                                       True, CAUSAL, s_layout)  # fmt: skip
                acc = warpgroup_mma_wait(0, deps=[o_tok])
                mbarrier.arrive(v_empty.index(st))
                acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
                p_op = gl.convert_layout(p.to(dtype), p_layout)
                kv_count += 1
                st = nt
            # the next tile (if any) and its keys
            n_tiles2 = 0
            m02 = m0
            n_keys2 = n_keys
            if r + 1 < count:
                t2 = _tile_id(sched_ptr, r + 1, pid, nprog, total, snake, TABLE)
                _bh2, m02, n_keys2, n_tiles2 = _tile_info(t2, num_bh, num_m, group, seq_q, seq_k, BLOCK_Q, BLOCK_N,
                                                         CAUSAL)  # fmt: skip
            primed = 0
            if n_tiles > 0:
                if n_tiles2 > 0:  # the last P V of this tile with the next tile's S_0
                    row02 = m02 + C * BLOCK_M
                    rows2 = row02 + gl.arange(0, BLOCK_M, layout=row_s)
                    full_keys2 = n_keys2
                    if CAUSAL:
                        full_keys2 = gl.minimum(gl.maximum(row02 + causal_shift + 1, 0), n_keys2)
                    qi2 = ((tile_count + 1) % Q_BUFS) * CONSUMERS + C
                    mbarrier.wait(q_full.index(qi2), ((tile_count + 1) // Q_BUFS) & 1)
                    nt = (kv_count + 1) % STAGES
                    mbarrier.wait(k_full.index(nt), ((kv_count + 1) // STAGES) & 1)
                    mbarrier.wait(v_full.index(st), (kv_count // STAGES) & 1)
                    if PINGPONG:
                        mbarrier.wait(turn.index(C), (turn_count + FIRST) & 1)
                    s_tok = warpgroup_mma(q_smem.index(qi2), k_smem.index(nt).permute((1, 0)), s_zero, use_acc=False,
                                          is_async=True)  # fmt: skip
                    o_tok = warpgroup_mma(p_op, v_smem.index(st), acc, is_async=True)
                    if PINGPONG:
                        mbarrier.arrive(turn.index(NEXT))
                    turn_count += 1
                    s = warpgroup_mma_wait(1, deps=[s_tok])
                    mbarrier.arrive(k_empty.index(nt))
                    if n_tiles2 == 1:
                        mbarrier.arrive(q_empty.index(qi2))
                    m2 = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=row_s)
                    l2 = gl.full([BLOCK_M], 0.0, gl.float32, layout=row_s)
                    if full_keys2 >= BLOCK_N:
                        p, m2, l2, alpha = _softmax_step(s, m2, l2, qk_scale, 0, rows2, n_keys2, causal_shift,
                                                         False, CAUSAL, s_layout)  # fmt: skip
                    else:
                        p, m2, l2, alpha = _softmax_step(s, m2, l2, qk_scale, 0, rows2, n_keys2, causal_shift,
                                                         True, CAUSAL, s_layout)  # fmt: skip
                    acc = warpgroup_mma_wait(0, deps=[o_tok])
                    mbarrier.arrive(v_empty.index(st))
                    kv_count += 1
                    st = nt
                    _epilogue(acc, l_i, m_i, row0, bh, o_ptr, lse_ptr, stride_ob, stride_oh, stride_om, num_heads,
                              seq_q, BLOCK_M, HEAD_DIM, s_layout, o_layout, STORE_BYTES)  # fmt: skip
                    acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=o_layout)
                    m_i = m2
                    l_i = l2
                    p_op = gl.convert_layout(p.to(dtype), p_layout)
                    primed = 1
                else:  # last block alone: O += P_{n-1} V_{n-1}
                    mbarrier.wait(v_full.index(st), (kv_count // STAGES) & 1)
                    if PINGPONG:
                        mbarrier.wait(turn.index(C), (turn_count + FIRST) & 1)
                    o_tok = warpgroup_mma(p_op, v_smem.index(st), acc, is_async=True)
                    if PINGPONG:
                        mbarrier.arrive(turn.index(NEXT))
                    turn_count += 1
                    acc = warpgroup_mma_wait(0, deps=[o_tok])
                    mbarrier.arrive(v_empty.index(st))
                    kv_count += 1
                    _epilogue(acc, l_i, m_i, row0, bh, o_ptr, lse_ptr, stride_ob, stride_oh, stride_om, num_heads,
                              seq_q, BLOCK_M, HEAD_DIM, s_layout, o_layout, STORE_BYTES)  # fmt: skip
            else:
                _epilogue(acc, l_i, m_i, row0, bh, o_ptr, lse_ptr, stride_ob, stride_oh, stride_om, num_heads,
                          seq_q, BLOCK_M, HEAD_DIM, s_layout, o_layout, STORE_BYTES)  # fmt: skip
            tile_count += 1

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _consumer_tiles(q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, turn,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                        o_ptr, lse_ptr, stride_ob, stride_oh, stride_om,
                        num_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale, sched_ptr,
                        C: gl.constexpr, HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                        STAGES: gl.constexpr, CONSUMERS: gl.constexpr, WARPS: gl.constexpr, OVERLAP: gl.constexpr,
                        PINGPONG: gl.constexpr, SPLIT_RELEASE: gl.constexpr, CAUSAL: gl.constexpr,
                        TABLE: gl.constexpr, Q_BUFS: gl.constexpr, NEXT: gl.constexpr, FIRST: gl.constexpr,
                        STORE_BYTES: gl.constexpr):  # fmt: skip
        """One CTA tile after another: its first Q K^T and last P V run alone (the designs a-c of the module)."""
        dtype: gl.constexpr = q_smem.dtype
        s_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[WARPS, 1], instr_shape=[16, BLOCK_N, 16]
        )
        o_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[WARPS, 1], instr_shape=[16, HEAD_DIM, 16]
        )
        p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
        row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
        row_o: gl.constexpr = gl.SliceLayout(1, o_layout)

        pid = gl.program_id(0)
        nprog = gl.num_programs(0)
        num_bh = total // num_m  # B * H
        causal_shift = seq_k - seq_q
        kv_count = 0
        tile_count = 0
        turn_count = 0
        for r in range(0, _tile_count(sched_ptr, pid, nprog, total, TABLE)):
            t = _tile_id(sched_ptr, r, pid, nprog, total, snake, TABLE)
            bh, m0, n_keys, n_tiles = _tile_info(
                t, num_bh, num_m, group, seq_q, seq_k, BLOCK_M * CONSUMERS, BLOCK_N, CAUSAL
            )
            row0 = m0 + C * BLOCK_M
            rows = row0 + gl.arange(0, BLOCK_M, layout=row_s)
            # key tiles [0, full_tiles) need no mask for any row of this consumer
            full_keys = n_keys
            if CAUSAL:
                full_keys = gl.minimum(gl.maximum(row0 + causal_shift + 1, 0), n_keys)
            full_tiles = full_keys // BLOCK_N

            m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=row_s)
            l_i = gl.full([BLOCK_M], 0.0, gl.float32, layout=row_s)
            acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=o_layout)
            s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=s_layout)
            qi = (tile_count % Q_BUFS) * CONSUMERS + C
            q_buf = q_smem.index(qi)
            mbarrier.wait(q_full.index(qi), (tile_count // Q_BUFS) & 1)
            if n_tiles > 0:
                if OVERLAP:
                    # block 0: S_0 = Q K_0^T alone
                    st = kv_count % STAGES
                    mbarrier.wait(k_full.index(st), (kv_count // STAGES) & 1)
                    if PINGPONG:
                        mbarrier.wait(turn.index(C), (turn_count + FIRST) & 1)
                    s_tok = warpgroup_mma(q_buf, k_smem.index(st).permute((1, 0)), s_zero, use_acc=False,
                                          is_async=True)  # fmt: skip
                    if PINGPONG:
                        mbarrier.arrive(turn.index(NEXT))
                    turn_count += 1
                    s = warpgroup_mma_wait(0, deps=[s_tok])
                    mbarrier.arrive(k_empty.index(st))
                    if n_tiles == 1:
                        mbarrier.arrive(q_empty.index(qi))
                    if full_tiles > 0:
                        p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, qk_scale, 0, rows, n_keys, causal_shift,
                                                           False, CAUSAL, s_layout)  # fmt: skip
                    else:
                        p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, qk_scale, 0, rows, n_keys, causal_shift,
                                                           True, CAUSAL, s_layout)  # fmt: skip
                    p_op = gl.convert_layout(p.to(dtype), p_layout)
                    for j in range(1, n_tiles):
                        nt = (kv_count + 1) % STAGES
                        mbarrier.wait(k_full.index(nt), ((kv_count + 1) // STAGES) & 1)
                        mbarrier.wait(v_full.index(st), (kv_count // STAGES) & 1)
                        if PINGPONG:
                            mbarrier.wait(turn.index(C), (turn_count + FIRST) & 1)
                        s_tok = warpgroup_mma(q_buf, k_smem.index(nt).permute((1, 0)), s_zero, use_acc=False,
                                              is_async=True)  # fmt: skip
                        o_tok = warpgroup_mma(p_op, v_smem.index(st), acc, is_async=True)
                        if PINGPONG:
                            mbarrier.arrive(turn.index(NEXT))
                        turn_count += 1
                        s = warpgroup_mma_wait(1, deps=[s_tok])
                        mbarrier.arrive(k_empty.index(nt))
                        if j == n_tiles - 1:
                            mbarrier.arrive(q_empty.index(qi))
                        if j < full_tiles:
                            p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, qk_scale, j * BLOCK_N, rows, n_keys,
                                                               causal_shift, False, CAUSAL, s_layout)  # fmt: skip
                        else:
                            p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, qk_scale, j * BLOCK_N, rows, n_keys,
                                                               causal_shift, True, CAUSAL, s_layout)  # fmt: skip
                        acc = warpgroup_mma_wait(0, deps=[o_tok])
                        mbarrier.arrive(v_empty.index(st))
                        acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
                        p_op = gl.convert_layout(p.to(dtype), p_layout)
                        kv_count += 1
                        st = nt
                    # last block: O += P_{n-1} V_{n-1}
                    mbarrier.wait(v_full.index(st), (kv_count // STAGES) & 1)
                    if PINGPONG:
                        mbarrier.wait(turn.index(C), (turn_count + FIRST) & 1)
                    o_tok = warpgroup_mma(p_op, v_smem.index(st), acc, is_async=True)
                    if PINGPONG:
                        mbarrier.arrive(turn.index(NEXT))
                    turn_count += 1
                    acc = warpgroup_mma_wait(0, deps=[o_tok])
                    mbarrier.arrive(v_empty.index(st))
                    kv_count += 1
                else:
                    for j in range(n_tiles):
                        st = kv_count % STAGES
                        ph = (kv_count // STAGES) & 1
                        mbarrier.wait(k_full.index(st), ph)
                        if PINGPONG:
                            mbarrier.wait(turn.index(C), (turn_count + FIRST) & 1)
                        s_tok = warpgroup_mma(q_buf, k_smem.index(st).permute((1, 0)), s_zero, use_acc=False,
                                              is_async=True)  # fmt: skip
                        if PINGPONG:
                            mbarrier.arrive(turn.index(NEXT))
                        turn_count += 1
                        s = warpgroup_mma_wait(0, deps=[s_tok])
                        if SPLIT_RELEASE:  # K may be refilled while the softmax and P V run
                            mbarrier.arrive(k_empty.index(st))
                        if j == n_tiles - 1:
                            mbarrier.arrive(q_empty.index(qi))
                        if j < full_tiles:
                            p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, qk_scale, j * BLOCK_N, rows, n_keys,
                                                               causal_shift, False, CAUSAL, s_layout)  # fmt: skip
                        else:
                            p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, qk_scale, j * BLOCK_N, rows, n_keys,
                                                               causal_shift, True, CAUSAL, s_layout)  # fmt: skip
                        acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
                        p_op = gl.convert_layout(p.to(dtype), p_layout)
                        mbarrier.wait(v_full.index(st), ph)
                        if PINGPONG:
                            mbarrier.wait(turn.index(C), (turn_count + FIRST) & 1)
                        o_tok = warpgroup_mma(p_op, v_smem.index(st), acc, is_async=True)
                        if PINGPONG:
                            mbarrier.arrive(turn.index(NEXT))
                        turn_count += 1
                        acc = warpgroup_mma_wait(0, deps=[o_tok])
                        if not SPLIT_RELEASE:  # load then compute: K and V are refilled together
                            mbarrier.arrive(k_empty.index(st))
                        mbarrier.arrive(v_empty.index(st))
                        kv_count += 1
            else:
                mbarrier.arrive(q_empty.index(qi))  # no key: Q is not read

            _epilogue(acc, l_i, m_i, row0, bh, o_ptr, lse_ptr, stride_ob, stride_oh, stride_om, num_heads, seq_q,
                      BLOCK_M, HEAD_DIM, s_layout, o_layout, STORE_BYTES)  # fmt: skip
            tile_count += 1

    # sizes are not specialized (a new Sq would otherwise recompile whenever its divisibility by 16 changes)
    @gluon.jit(do_not_specialize=["num_heads", "num_kv_heads", "seq_q", "seq_k", "num_m", "group", "total", "snake"])  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _fa3_fwd_kernel(q_desc, k_desc, v_desc, o_ptr, lse_ptr, sched_ptr,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                        stride_ob, stride_oh, stride_om,
                        num_heads, num_kv_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale,
                        HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                        STAGES: gl.constexpr, CONSUMERS: gl.constexpr, OVERLAP: gl.constexpr,
                        PINGPONG: gl.constexpr, SPLIT_RELEASE: gl.constexpr, Q_LATE: gl.constexpr,
                        CAUSAL: gl.constexpr, PRODUCER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                        TABLE: gl.constexpr, Q_BUFS: gl.constexpr, XTILE: gl.constexpr, STORE_BYTES: gl.constexpr):  # fmt: skip
        gl.static_assert(CONSUMERS >= 1 and CONSUMERS <= 3)
        gl.static_assert(not XTILE or OVERLAP)  # the cross-tile loop is the overlapped one
        gl.static_assert(STAGES >= 2 or not OVERLAP)  # the overlapped loop holds two stages at once
        dtype: gl.constexpr = q_desc.dtype
        q_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, HEAD_DIM], dtype)
        kv_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, HEAD_DIM], dtype)
        q_smem = gl.allocate_shared_memory(dtype, [Q_BUFS * CONSUMERS, BLOCK_M, HEAD_DIM], q_layout)
        k_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], kv_layout)
        v_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], kv_layout)
        bar_layout: gl.constexpr = mbarrier.MBarrierLayout()
        q_full = gl.allocate_shared_memory(gl.int64, [Q_BUFS * CONSUMERS, 1], bar_layout)
        q_empty = gl.allocate_shared_memory(gl.int64, [Q_BUFS * CONSUMERS, 1], bar_layout)
        k_full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
        v_full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
        k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
        v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
        turn = gl.allocate_shared_memory(gl.int64, [3, 1], bar_layout)
        for c in gl.static_range(Q_BUFS * CONSUMERS):
            mbarrier.init(q_full.index(c), count=1)
            mbarrier.init(q_empty.index(c), count=1)
        for s in gl.static_range(STAGES):
            mbarrier.init(k_full.index(s), count=1)
            mbarrier.init(v_full.index(s), count=1)
            mbarrier.init(k_empty.index(s), count=CONSUMERS)
            mbarrier.init(v_empty.index(s), count=CONSUMERS)
        for c in gl.static_range(3):
            mbarrier.init(turn.index(c), count=1)
        fence_async_shared()

        # (tuples are written out: Gluon 3.6 keeps constexprs only in literal argument tuples)
        zero: gl.constexpr = 0
        one: gl.constexpr = 1
        two: gl.constexpr = 2
        four: gl.constexpr = 4
        eight: gl.constexpr = 8
        three: gl.constexpr = 3
        if CONSUMERS == 3:
            gl.warp_specialize(
                [
                    (_consumer, (q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, turn,
                                 o_ptr, lse_ptr, stride_ob, stride_oh, stride_om,
                                 num_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale, sched_ptr,
                                 zero, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, three, four, OVERLAP, PINGPONG, SPLIT_RELEASE, CAUSAL,
                                 TABLE, Q_BUFS, one, one, XTILE, STORE_BYTES)),
                    (_consumer, (q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, turn,
                                 o_ptr, lse_ptr, stride_ob, stride_oh, stride_om,
                                 num_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale, sched_ptr,
                                 one, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, three, four, OVERLAP, PINGPONG, SPLIT_RELEASE, CAUSAL,
                                 TABLE, Q_BUFS, two, zero, XTILE, STORE_BYTES)),
                    (_consumer, (q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, turn,
                                 o_ptr, lse_ptr, stride_ob, stride_oh, stride_om,
                                 num_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale, sched_ptr,
                                 two, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, three, four, OVERLAP, PINGPONG, SPLIT_RELEASE, CAUSAL,
                                 TABLE, Q_BUFS, zero, zero, XTILE, STORE_BYTES)),
                    (_producer, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full,
                                 k_empty, v_empty, num_heads, num_kv_heads, seq_q, seq_k, num_m, group, total,
                                 snake, sched_ptr, BLOCK_M, BLOCK_N, STAGES, CONSUMERS, Q_LATE, CAUSAL, TABLE, Q_BUFS)),
                ],
                [4, 4, 1],
                [CONSUMER_REGS, CONSUMER_REGS, PRODUCER_REGS],
            )  # fmt: skip
        elif CONSUMERS == 2:
            gl.warp_specialize(
                [
                    (_consumer, (q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, turn,
                                 o_ptr, lse_ptr, stride_ob, stride_oh, stride_om,
                                 num_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale, sched_ptr,
                                 zero, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, two, four, OVERLAP, PINGPONG, SPLIT_RELEASE, CAUSAL,
                                 TABLE, Q_BUFS, one, one, XTILE, STORE_BYTES)),
                    (_consumer, (q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, turn,
                                 o_ptr, lse_ptr, stride_ob, stride_oh, stride_om,
                                 num_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale, sched_ptr,
                                 one, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, two, four, OVERLAP, PINGPONG, SPLIT_RELEASE, CAUSAL,
                                 TABLE, Q_BUFS, zero, zero, XTILE, STORE_BYTES)),
                    (_producer, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full,
                                 k_empty, v_empty, num_heads, num_kv_heads, seq_q, seq_k, num_m, group, total,
                                 snake, sched_ptr, BLOCK_M, BLOCK_N, STAGES, CONSUMERS, Q_LATE, CAUSAL, TABLE, Q_BUFS)),
                ],
                [4, 1],
                [CONSUMER_REGS, PRODUCER_REGS],
            )  # fmt: skip
        else:
            gl.warp_specialize(
                [
                    (_consumer, (q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full, k_empty, v_empty, turn,
                                 o_ptr, lse_ptr, stride_ob, stride_oh, stride_om,
                                 num_heads, seq_q, seq_k, num_m, group, total, snake, qk_scale, sched_ptr,
                                 zero, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, one, eight, OVERLAP, PINGPONG, SPLIT_RELEASE, CAUSAL,
                                 TABLE, Q_BUFS, zero, one, XTILE, STORE_BYTES)),
                    (_producer, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_full, q_empty, k_full, v_full,
                                 k_empty, v_empty, num_heads, num_kv_heads, seq_q, seq_k, num_m, group, total,
                                 snake, sched_ptr, BLOCK_M, BLOCK_N, STAGES, CONSUMERS, Q_LATE, CAUSAL, TABLE, Q_BUFS)),
                ],
                [1],
                [PRODUCER_REGS],
            )  # fmt: skip


# ---------------------------------------------------------------------------- dispatch


def _tma_ok(t: torch.Tensor) -> bool:
    """A 4-D TMA descriptor needs a 16-byte-aligned base and 16-byte-aligned strides, unit last stride."""
    e = t.element_size()
    return bool(t.stride(3) == 1 and t.data_ptr() % 16 == 0 and all((t.stride(i) * e) % 16 == 0 for i in range(3)))


@functools.lru_cache(maxsize=16)
def _device_ok(index: int) -> bool:
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)

    return bool(torch.cuda.get_device_capability(index) == (9, 0))


@functools.lru_cache(maxsize=16)
def _sm_count(index: int) -> int:
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)

    return int(torch.cuda.get_device_properties(index).multi_processor_count)


_FAILED: list[str] = []  # the first failure, kept for `gluon_status()`; the Gluon path is off afterwards


def gluon_failed(exc: BaseException) -> None:
    """Called by the dispatch when the Gluon kernel raised (compile error, out of resources): turn it off."""
    if not _FAILED:
        _FAILED.append(f"{type(exc).__name__}: {str(exc)[:500]}")
        warnings.warn(f"tilewise: the Gluon attention kernel failed ({_FAILED[0][:200]}); using the Triton kernel",
                      RuntimeWarning, stacklevel=3)  # fmt: skip


def use_gluon(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None, causal: bool = False) -> bool:
    """Whether `tilewise.kernels.attention` should run the Gluon kernel for these (already checked) inputs.

    Hopper (sm 9.0) GPU, a Triton version on which the GPU tests passed (`GLUON_VERIFIED`) with the
    Gluon names this file uses, fp16/bf16, head_dim in DISPATCH_HEAD_DIMS (D 64 from D64_MIN_KEYS keys), a
    positive scale (the unmasked softmax scales the row max), TMA-compatible layouts, a kernel the roofline puts at
    >= `tilewise.kernels.utils.DESC_MIN_SECONDS` (`long_kernel`); TILEWISE_GLUON=0 turns it off.
    """
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)

    if os.environ.get("TILEWISE_GLUON", "1") == "0" or os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        return False
    if _FAILED or _IMPORT_ERROR is not None or triton.__version__ not in GLUON_VERIFIED or not gluon_available():
        return False
    if (
        not q.is_cuda
        or q.dtype not in (torch.float16, torch.bfloat16)
        or not dispatches(q.shape[-1], k.shape[2], causal)
    ):
        return False
    if scale is not None and not scale > 0:
        return False
    if not (_tma_ok(q) and _tma_ok(k) and _tma_ok(v)):
        return False
    if not _device_ok(q.device.index if q.device.index is not None else torch.cuda.current_device()):
        return False
    from tilewise.kernels.utils import long_kernel  # deferred: it imports torch

    # Its host launch (two allocations, three descriptors: 36.6 us a call against the Triton kernel's ~20 on
    # the H200's host, B1 H2 S64 D64) hides only behind a long enough kernel: the TMA descriptors' rule
    B, H, Sq, D = q.shape
    Hk, Sk = k.shape[1], k.shape[2]
    return long_kernel(q.device, 4.0 * B * H * Sq * Sk * D, (2 * B * H * Sq + 2 * B * Hk * Sk) * D * q.element_size(),
                       q.dtype)  # fmt: skip


def dispatches(head_dim: int, seq_k: int, causal: bool) -> bool:
    """The head dims and lengths the dispatch gives the Gluon kernel (DISPATCH_HEAD_DIMS, D64_MIN_KEYS)."""
    if head_dim not in DISPATCH_HEAD_DIMS:
        return False
    return head_dim != 64 or seq_k >= D64_MIN_KEYS[bool(causal)]


# ---------------------------------------------------------------------------- launcher


def kernel_constexprs(cfg: GluonConfig, causal: bool, table: bool | None = None) -> dict[str, Any]:
    """The kernel's compile-time arguments; `table`: the CTAs read `lpt_schedule` (default: cfg.lpt and causal)."""
    return dict(
        HEAD_DIM=cfg.head_dim,
        BLOCK_M=cfg.rows_per_consumer,
        BLOCK_N=cfg.block_n,
        STAGES=cfg.stages,
        CONSUMERS=cfg.consumers,
        OVERLAP=cfg.overlap,
        PINGPONG=cfg.pingpong,
        SPLIT_RELEASE=cfg.design != "serial",
        Q_LATE=cfg.q_late,
        CAUSAL=bool(causal),
        PRODUCER_REGS=cfg.producer_regs,
        CONSUMER_REGS=cfg.consumer_regs,
        TABLE=bool(cfg.lpt and causal) if table is None else bool(table),
        Q_BUFS=cfg.q_bufs,
        XTILE=cfg.xtile,
        STORE_BYTES=cfg.store_bytes,
    )


def num_warps_for(cfg: GluonConfig) -> int:
    """Warps of the default partition (the first consumer): 4 in ping-pong, 8 for the single consumer."""
    return cfg.consumer_warps


def head_group(
    batch_heads: int,
    seq_k: int,
    head_dim: int,
    elem_bytes: int,
    fraction: float | None = None,
    l2_bytes: int = 60 * 2**20,
) -> int:
    """Heads whose K and V fit together in `fraction` of L2 (the persistent order visits them as a group).

    Measured on the H200 (attention_fa3_variants.json): B4 H32 S4096 D128 non-causal runs 646 TFLOP/s
    with groups of 12 heads and 509 with all 128 heads in one group (K/V re-read from HBM).
    """
    f = L2_FRACTION if fraction is None else fraction
    per_head = 2 * seq_k * head_dim * elem_bytes
    return max(1, min(batch_heads, int(l2_bytes * f) // max(per_head, 1)))


# A CTA tile's fixed work (Q load, the first Q K^T and the last P V that nothing overlaps, the epilogue),
# counted in key tiles when `lpt_schedule` weighs the tiles: an estimate from the overlapped loop's shape
# (one S = QK^T and one P V outside the steady state, plus the output store), not a measurement.
TILE_OVERHEAD = 1.5


def tile_key_tiles(t: int, batch_heads: int, num_m: int, group: int, seq_q: int, seq_k: int, block_n: int,
                   causal: bool, rows: int = ROWS_PER_CTA) -> tuple[int, int]:  # fmt: skip
    """(b*h index, key tiles) of tile t of the persistent order: `_tile_info` on the host (CTA tiles of `rows`)."""
    per_group = group * num_m
    g, r = divmod(t, per_group)
    gs = min(batch_heads - g * group, group)
    m_blk = num_m - 1 - r // gs
    keys = seq_k
    if causal:
        keys = min(max(m_blk * rows + rows + seq_k - seq_q, 0), seq_k)
    return g * group + r % gs, cdiv(keys, block_n)


@functools.lru_cache(maxsize=256)
def lpt_schedule(batch_heads: int, num_m: int, group: int, seq_q: int, seq_k: int, block_n: int, causal: bool,
                 nprog: int, rows: int = ROWS_PER_CTA) -> tuple[int, ...]:  # fmt: skip
    """The persistent CTAs' tiles, longest processing time first: offsets[nprog + 1], then each CTA's tiles.

    The tiles keep the L2 order (head groups one after another, longest tile first inside a group), and each
    goes to the CTA with the least work so far (key tiles + TILE_OVERHEAD per tile). Every grid-th tile
    instead leaves the last CTA to finish with up to 1.5x the mean work under a causal mask (B1 H16 S32k:
    4,096 tiles of 2..256 key tiles on 132 CTAs, 1.51x with the mirrored order, 1.04x without; this table 1.00x).
    """
    loads = [(0.0, p) for p in range(nprog)]
    own: list[list[int]] = [[] for _ in range(nprog)]
    for t in range(batch_heads * num_m):
        _bh, n = tile_key_tiles(t, batch_heads, num_m, group, seq_q, seq_k, block_n, causal, rows)
        load, p = heapq.heappop(loads)
        own[p].append(t)
        heapq.heappush(loads, (load + n + TILE_OVERHEAD, p))
    offsets = [0]
    for lst in own:
        offsets.append(offsets[-1] + len(lst))
    return tuple(offsets) + tuple(t for lst in own for t in lst)


def round_robin_tiles(pid: int, nprog: int, total: int, snake: bool) -> list[int]:
    """CTA pid's tiles in the arithmetic order: `_tile_at` on the host."""
    out = []
    for r in range((total - pid + nprog - 1) // nprog):
        t = r * nprog + pid
        if snake and r % 2 == 1 and (r + 1) * nprog <= total:
            t = r * nprog + nprog - 1 - pid
        out.append(t)
    return out


# The table is taken when it shortens the busiest CTA's work by more than this share (the host's estimate,
# key tiles + TILE_OVERHEAD per tile). On the H200 sweep (benchmarks/results/h200/attention_sweep.json) the
# table won where the arithmetic order is unbalanced (B1 H16 S32768 D128 causal 429 -> 655 TFLOP/s: 1.51x
# estimated) and lost where it is balanced already (GQA B16 H32/4 S1024 D128 causal, 1.00x: 392 -> 365).
LPT_MIN_GAIN = 0.02


@functools.lru_cache(maxsize=512)
def busiest_cta(batch_heads: int, num_m: int, group: int, seq_q: int, seq_k: int, block_n: int, causal: bool,
                nprog: int, lpt: bool, snake: bool, rows: int = ROWS_PER_CTA) -> tuple[int, int]:  # fmt: skip
    """(key tiles, CTA tiles) of the CTA with the most work (key tiles + TILE_OVERHEAD per tile, the host's
    estimate) under the arithmetic order or (`lpt`) the table: what `tilewise.model.pipeline.persistent_forward_ms`
    takes. Python over every tile, once per shape (`use_lpt` on B1 H32 S131072, 32,768 tiles: 75 ms, 2.3 us a
    tile for both orders)."""
    total = batch_heads * num_m
    lists: list[Sequence[int]]
    if lpt:
        sched = lpt_schedule(batch_heads, num_m, group, seq_q, seq_k, block_n, causal, nprog, rows)
        lists = [sched[nprog + 1 + sched[p] : nprog + 1 + sched[p + 1]] for p in range(nprog)]
    else:
        lists = [round_robin_tiles(p, nprog, total, snake) for p in range(nprog)]
    best = (-1.0, 0, 0)
    for lst in lists:
        keys = sum(tile_key_tiles(t, batch_heads, num_m, group, seq_q, seq_k, block_n, causal, rows)[1] for t in lst)
        best = max(best, (keys + TILE_OVERHEAD * len(lst), keys, len(lst)))
    return best[1], best[2]


def use_lpt(batch_heads: int, num_m: int, group: int, seq_q: int, seq_k: int, block_n: int, nprog: int,
            snake: bool, rows: int = ROWS_PER_CTA) -> bool:  # fmt: skip
    """Whether the causal tiles should follow `lpt_schedule`: the busiest CTA's estimated work under the
    arithmetic order exceeds the table's by more than LPT_MIN_GAIN."""

    def work(kt: tuple[int, int]) -> float:
        return kt[0] + TILE_OVERHEAD * kt[1]

    args = (batch_heads, num_m, group, seq_q, seq_k, block_n, True, nprog)
    arith, table = busiest_cta(*args, False, snake, rows), busiest_cta(*args, True, snake, rows)
    return work(arith) > work(table) * (1 + LPT_MIN_GAIN)


# Attention over at least this many keys (non-causal, causal) runs the consumers without the turn order
# (`pingpong=False`, each issues its GEMMs as soon as its operands are ready); three consumers never take it.
# H200 sweep, graphs: faster on 14 of 16 non-causal rows with S >= 4096 (B1 H16 S32768 D128 626 -> 678 TFLOP/s,
# B1 H8 S16384 D256 668 -> 691, B2 H64/8 S8192 D128 644 -> 665; the two others within 2%); on shorter non-causal
# rows too (attention_fwd_variants.json, bf16: B32 H16 S512 D128 0.73x -> 0.78x of cuDNN, S1024 0.86x -> 0.90x,
# S2048 0.92x -> 0.95x, GQA B16 H32/4 S1024 0.86x -> 0.91x, D 256 +1-2%). Causal rows keep the order (mixed).
TURN_FREE_KEYS = {False: 512, True: 1 << 62}


@functools.lru_cache(maxsize=1024)
def shape_config(head_dim: int, dtype: str, batch_heads: int, seq_q: int, seq_k: int, causal: bool, nprog: int,
                 group: int) -> GluonConfig:  # fmt: skip
    """The ping-pong config for one problem: the consumers' turn order (TURN_FREE_KEYS) and the causal
    schedule (`use_lpt`), from the per-head-dim `gluon_config`."""
    consumers = shape_consumers(head_dim, seq_k, causal)
    cfg = gluon_config(head_dim, "pingpong", dtype, Q_LATE, SNAKE, consumers=consumers,
                       q_bufs=shape_q_bufs(head_dim, dtype, seq_k))  # fmt: skip
    turn = seq_k < TURN_FREE_KEYS[bool(causal)] and consumers == 2
    rows = cfg.rows_per_cta
    num_m = cdiv(seq_q, rows)
    lpt = LPT and causal and use_lpt(batch_heads, num_m, group, seq_q, seq_k, cfg.block_n, nprog, cfg.snake, rows)
    return dataclasses.replace(cfg, pingpong=cfg.pingpong and turn, lpt=lpt)


# Keys up to which a CTA tile's Q is double-buffered (`q_bufs=2`): the next tile's Q then loads while this
# tile's last K/V tiles run, where a short tile has too few to hide the load behind; 0 keeps one buffer.
Q_BUFS_MAX_KEYS = 0


def shape_q_bufs(head_dim: int, dtype: str, seq_k: int) -> int:
    """Q buffers per consumer for a problem: 2 up to Q_BUFS_MAX_KEYS keys where two still leave 2 K/V stages."""
    if seq_k > Q_BUFS_MAX_KEYS:
        return 1
    try:
        gluon_config(head_dim, "pingpong", dtype, Q_LATE, SNAKE, q_bufs=2)
    except InputError:
        return 1
    return 2


# D 64 takes three consumers from this many keys (non-causal, causal): H200, bf16, CUDA graphs, against cuDNN
# (attention_fwd_variants.json, both without the turn order): non-causal S 1024 0.87x (two: 0.89x), S 2048 0.96x
# (0.92x), S 8192 1.05x (0.93x); causal S 2048 0.84x (0.87x), S 8192 0.99x (0.95x). A 192-row CTA tile walks
# more masked keys on the diagonal, which short causal rows feel most (S 512: 0.58x against 0.68x).
THREE_CONSUMER_KEYS = {False: 2048, True: 8192}


def shape_consumers(head_dim: int, seq_k: int, causal: bool) -> int:
    """Consumer warpgroups of the ping-pong kernel for a problem: 3 at D 64 from THREE_CONSUMER_KEYS keys."""
    if head_dim == 64 and seq_k >= THREE_CONSUMER_KEYS[bool(causal)]:
        return 3
    return CONSUMERS.get(head_dim, 2)


def cta_rows(head_dim: int, seq_k: int, causal: bool) -> int:
    """Query rows of one ping-pong CTA tile for a problem (64 per consumer, `shape_consumers`)."""
    return 64 * shape_consumers(head_dim, seq_k, causal)


def dispatch_group(batch_heads: int, seq_q: int, seq_k: int, head_dim: int, elem_bytes: int, causal: bool,
                   nprog: int, kv_group: int = 1) -> int:  # fmt: skip
    """Heads of one group of the persistent order for a problem: `head_group`'s L2 rule, and for causal rows
    up to SHORT_CAUSAL_KEYS keys no more K/V heads than one round of the grid covers (nprog / CTA tiles of a
    head), each K/V head with its `kv_group` query heads."""
    group = head_group(batch_heads, seq_k, head_dim, elem_bytes)
    if causal and seq_k <= SHORT_CAUSAL_KEYS:
        num_m = cdiv(seq_q, cta_rows(head_dim, seq_k, causal))
        group = max(1, min(group, nprog // max(num_m, 1) * max(1, kv_group)))
    return group


# Causal problems up to this many keys group only the heads one round of the grid covers (`dispatch_group`).
# H200, bf16, CUDA graphs (attention_fwd_variants.json, 8-head groups against the L2 rule's 24/12): B8 H16 S2048
# D128 0.95x -> 1.00x of cuDNN, B8 H8 S2048 D256 0.90x -> 0.99x, B32 H16 S512 D128 0.71x -> 0.75x; K/V tiles
# loaded by the CTAs of one round at about the same time hit in L2 more than a group larger than the round.
# Counted in K/V heads: GQA B16 H32/4 S1024 D128 causal ran 0.91x with the L2 rule's 48 query heads and 0.85x
# with 16 (2 K/V heads for the whole grid).
SHORT_CAUSAL_KEYS = 2048


def problem_busiest(batch_heads: int, seq: int, head_dim: int, causal: bool, dtype: str = "bf16",
                    sms: int = 132, kv_group: int = 1) -> tuple[GluonConfig, int, int]:  # fmt: skip
    """(config, key tiles, CTA tiles) of the busiest CTA of the dispatch's build for self-attention of `seq`
    tokens on `sms` SMs: the kernel's own rows, head group and schedule, what the time model takes."""
    rows = cta_rows(head_dim, seq, causal)
    num_m = cdiv(seq, rows)
    nprog = min(sms, batch_heads * num_m)
    group = dispatch_group(batch_heads, seq, seq, head_dim, 2, causal, nprog, kv_group)
    cfg = shape_config(head_dim, dtype, batch_heads, seq, seq, causal, nprog, group)
    kt, nt = busiest_cta(batch_heads, num_m, group, seq, seq, cfg.block_n, causal, nprog, cfg.lpt and causal,
                         cfg.snake, rows)  # fmt: skip
    return cfg, kt, nt


# (lpt_schedule's arguments, device) -> [device table, pinned host copy, copy-done event]. Never freed: a captured
# CUDA graph holds a table's address (a table is (grid + 1 + tiles) int32s: 17 KB for B1 H16 S32768).
_SCHEDULES: dict[tuple[tuple[Any, ...], torch.device], list[Any]] = {}


def _schedule_tensor(key: tuple[Any, ...], device: torch.device) -> torch.Tensor | None:
    """The schedule on the device, built once per shape (outside a CUDA-graph capture: None inside one)."""
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)

    entry = _SCHEDULES.get((key, device))
    if entry is None:
        if torch.cuda.is_current_stream_capturing():
            return None  # a host-to-device copy cannot be captured: the arithmetic order runs instead
        # pinned and non-blocking: the copy neither waits for the GPU nor counts as a synchronizing call (the
        # bench harness warms up under torch's sync debug mode "error"); the host copy lives until it is done
        host = torch.tensor(lpt_schedule(*key), dtype=torch.int32).pin_memory()
        sched = host.to(device, non_blocking=True)
        done = torch.cuda.Event()
        done.record()
        _SCHEDULES[(key, device)] = [sched, host, done]
        return sched
    # An event query inside a capture invalidates it (cudaEventQuery is not allowed in global capture mode):
    # look only outside one; a graph captured later replays after the copy was enqueued before it.
    if entry[2] is not None and not torch.cuda.is_current_stream_capturing():
        if entry[2].query():
            entry[1] = entry[2] = None
        else:
            torch.cuda.current_stream(device).wait_event(entry[2])  # another stream may run before the copy
    return entry[0]


def _nvmma(block: list[int], dtype_bits: int) -> Any:
    return gl.NVMMASharedLayout(swizzle_byte_width=_swizzle(block[-1] * dtype_bits // 8), element_bitwidth=dtype_bits,
                                rank=len(block))  # fmt: skip


def _swizzle(row_bytes: int) -> int:
    for w in (128, 64, 32):
        if row_bytes % w == 0:
            return w
    return 0


@dataclass
class _Plan:
    """What a call signature fixes (`gluon_attention`): the config, grid, schedule key and runtime ints, the
    descriptors' layouts, and one `tilewise.kernels.utils.Launcher` per schedule kind (table or not)."""

    cfg: GluonConfig
    grid: tuple[int]
    sched_key: tuple[Any, ...] | None
    ints: tuple[Any, ...]
    q_layout: Any
    kv_layout: Any
    launchers: dict[bool, Any]


_PLANS: dict[tuple[Any, ...], _Plan] = {}


def _plan(q: torch.Tensor, k: torch.Tensor, causal: bool, scale: float | None, design: str, num_sms: int | None,
          config: GluonConfig | None, group: int | None) -> _Plan:  # fmt: skip
    """The launch plan of a call: built once per signature, so a repeated call pays two allocations, three
    descriptors and a direct launch (the JIT binder alone cost ~100 us a call on the H200's host)."""
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)

    B, H, Sq, D = q.shape
    Hk, Sk = k.shape[1], k.shape[2]
    dt = "bf16" if q.dtype == torch.bfloat16 else "fp16"
    if config is not None:
        rows = config.rows_per_cta
    else:
        rows = cta_rows(D, Sk, bool(causal)) if design == "pingpong" else ROWS_PER_CTA
    num_m = cdiv(Sq, rows)
    total = B * H * num_m
    if num_sms is None:
        num_sms = _sm_count(q.device.index if q.device.index is not None else torch.cuda.current_device())
    grid = (min(total, num_sms),)
    if group is None:
        group = dispatch_group(B * H, Sq, Sk, D, q.element_size(), bool(causal), grid[0], H // Hk)
    if config is not None:  # `config` / `group`: overrides for sweeps
        cfg = config
    elif design == "pingpong":
        cfg = shape_config(D, dt, B * H, Sq, Sk, bool(causal), grid[0], group)
    else:
        cfg = gluon_config(D, design, dt, Q_LATE, SNAKE)
    sm_scale = (1.0 / math.sqrt(D)) if scale is None else float(scale)
    sched_key = (B * H, num_m, group, Sq, Sk, cfg.block_n, True, grid[0], rows) if cfg.lpt and causal else None
    # out is allocated contiguous [B, H, Sq, D]: its strides are the plan's
    ints = (H * Sq * D, Sq * D, D, H, Hk, Sq, Sk, num_m, group, total, int(cfg.snake), sm_scale * LOG2E)
    return _Plan(cfg, grid, sched_key, ints, _nvmma([1, 1, cfg.rows_per_consumer, D], 16),
                 _nvmma([1, 1, cfg.block_n, D], 16), {})  # fmt: skip


def gluon_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False,
                    scale: float | None = None, design: str = "pingpong", num_sms: int | None = None,
                    config: GluonConfig | None = None,
                    group: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """FA3's forward on Hopper. Inputs as `tilewise.kernels.attention` (already checked there):
    q [B, H, Sq, D], k/v [B, Hkv, Sk, D], fp16/bf16, D in (64, 128, 256), last dim contiguous."""
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor  # deferred: Gluon's host API, at launch only

    from tilewise.kernels.utils import Launcher  # deferred: it imports torch

    B, H, Sq, D = q.shape
    out = torch.empty((B, H, Sq, D), device=q.device, dtype=q.dtype)
    lse = torch.empty((B, H, Sq), device=q.device, dtype=torch.float32)
    if B * H * Sq == 0:
        return out, lse
    key = (q.shape, q.stride(), k.shape, k.stride(), v.stride(), q.dtype, q.device, bool(causal), scale, design,
           num_sms, config, group)  # fmt: skip
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= 4096:  # bounded, like the other kernels' plan caches
            _PLANS.clear()
        plan = _PLANS[key] = _plan(q, k, bool(causal), scale, design, num_sms, config, group)
    cfg = plan.cfg
    sched = None if plan.sched_key is None else _schedule_tensor(plan.sched_key, q.device)
    table = sched is not None
    launch = plan.launchers.get(table)
    if launch is None:
        consts = kernel_constexprs(cfg, causal, table)
        launch = plan.launchers[table] = Launcher(_fa3_fwd_kernel, plan.grid, consts, num_warps=num_warps_for(cfg))
    bq, bkv = [1, 1, cfg.rows_per_consumer, D], [1, 1, cfg.block_n, D]
    q_desc = TensorDescriptor(q, list(q.shape), list(q.stride()), bq, plan.q_layout)
    k_desc = TensorDescriptor(k, list(k.shape), list(k.stride()), bkv, plan.kv_layout)
    v_desc = TensorDescriptor(v, list(v.shape), list(v.stride()), bkv, plan.kv_layout)
    launch(q_desc, k_desc, v_desc, out, lse, sched if table else lse, *plan.ints)
    return out, lse


def _resource_usage(cubin: bytes) -> tuple[int, int]:
    """(registers per thread, stack frame bytes) from cuobjdump, the tool Triton's wheel ships."""
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        txt = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    reg = re.search(r"REG:(\d+)", txt)
    stack = re.search(r"STACK:(\d+)", txt)
    return (int(reg.group(1)) if reg else -1, int(stack.group(1)) if stack else -1)


def compile_sm90(design: str, head_dim: int, dtype: str = "bf16", causal: bool = False, consumers: int | None = None,
                 q_bufs: int = 1, xtile: bool = False, store_bytes: int | None = None) -> dict[str, Any]:  # fmt: skip
    """Build the kernel for sm_90a without a GPU; returns registers, spills and shared memory per CTA.

    Uses only Triton (no torch, no device): the PyPI wheel carries ptxas.
    """
    from triton.backends.compiler import GPUTarget  # deferred: only the offline sm_90a build uses the compiler API
    from triton.experimental.gluon._runtime import GluonASTSource  # (as above)

    cfg = gluon_config(head_dim, design, dtype, consumers=consumers, q_bufs=q_bufs, xtile=xtile)
    if store_bytes is not None:
        cfg = dataclasses.replace(cfg, store_bytes=store_bytes)
    tname = {"bf16": "bf16", "fp16": "fp16"}[dtype]
    bits = 16

    def dsig(rows: int) -> str:
        block = [1, 1, rows, head_dim]
        return f"tensordesc<{tname}[{','.join(map(str, block))}],{_nvmma(block, bits)!r}>"

    consts = kernel_constexprs(cfg, causal)
    sig = {
        "q_desc": dsig(cfg.rows_per_consumer),
        "k_desc": dsig(cfg.block_n),
        "v_desc": dsig(cfg.block_n),
        "o_ptr": f"*{tname}",
        "lse_ptr": "*fp32",
        "sched_ptr": "*i32",
    }
    for name in ("stride_ob", "stride_oh", "stride_om", "num_heads", "num_kv_heads", "seq_q", "seq_k", "num_m",
                 "group", "total", "snake"):  # fmt: skip
        sig[name] = "i32"
    sig["qk_scale"] = "fp32"
    for name in consts:
        sig[name] = "constexpr"
    # what a launch specializes: 16-byte-aligned pointers and strides divisible by 16 elements (contiguous heads)
    names = list(_fa3_fwd_kernel.arg_names)
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in ("o_ptr", "lse_ptr", "stride_ob", "stride_oh",
                                                                    "stride_om")}  # fmt: skip
    src = GluonASTSource(_fa3_fwd_kernel, sig, consts, attrs)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 128), options={"num_warps": num_warps_for(cfg)})
    regs, stack = _resource_usage(k.asm["cubin"])
    return {
        "design": design,
        "head_dim": head_dim,
        "causal": causal,
        "registers": regs,
        "stack_bytes": stack,
        "shared_bytes": k.metadata.shared,
        "stages": cfg.stages,
        "block_n": cfg.block_n,
        "consumers": cfg.consumers,
        "q_bufs": cfg.q_bufs,
        "asm": k.asm,
    }


__all__ = [
    "DESIGNS",
    "GLUON_VERIFIED",
    "STORE_BYTES",
    "GluonConfig",
    "busiest_cta",
    "cta_rows",
    "dispatch_group",
    "dispatches",
    "gluon_attention",
    "gluon_available",
    "gluon_config",
    "gluon_failed",
    "head_group",
    "lpt_schedule",
    "problem_busiest",
    "shape_config",
    "shape_consumers",
    "store_scratch_bytes",
    "tile_key_tiles",
    "use_gluon",
    "use_lpt",
]
