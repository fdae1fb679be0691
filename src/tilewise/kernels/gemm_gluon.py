"""GEMM for Hopper (sm_90a) in Gluon: a TMA producer warp, an mbarrier ring, wgmma consumer warpgroups, persistent.

    c = gluon_matmul(a, b)            # a [M, K], b [K, N] or b = w.T (w [N, K] row-major); fp16/bf16; H200 only

The layout of a warp-specialized Hopper GEMM (CUTLASS's sm90 "warpspecialized" kernels name the same
pieces: mainloop, epilogue, tile scheduler), one `gl.warp_specialize` partition per role:

* tile scheduler (`_tile_mn`): one CTA per SM walks the output tiles t = pid, pid + grid, ...; the
  tiles are numbered in groups of GROUP_M row tiles so that the CTAs of one wave share the same B
  columns while they are in L2 (the grouped raster of `tilewise.kernels.gemm`).
* producer (1 warp, few registers): for every tile and K step, waits until ring stage s is empty,
  tells the stage's "full" barrier how many bytes to expect and issues the TMA copies of the A and B
  tiles into it; the copy engine completes the barrier. Past the matrix edges TMA reads zeros, so
  M, N and K need no masks (K = 16 with BLOCK_K = 64 reads one real and three zero quarter-steps).
* consumers (one warpgroup each, 4 warps): per K step wait for "full", issue an asynchronous wgmma
  (both operands from shared memory), wait until at most one wgmma group is in flight and release
  the previous step's stage (arrive on its "empty" barrier): the Tensor Cores always have the next
  MMA queued while the warps wait on the barrier.
  - "cooperative": the consumers work on one CTA tile, each on its own SUB_M rows (two 64-row
    halves of a 128 x 256 tile, or three 64-row thirds of a 192 x 128 one): a stage is released when all
    have arrived.
  - "pingpong": the consumers alternate whole tiles (each SUB_M x BLOCK_N), so one warpgroup's
    epilogue runs while the other's main loop keeps the Tensor Cores busy.
  - "single": one consumer (small problems: 64-row tiles give 4x the CTAs of 128 x 256).
* epilogue: bias and activation in fp32 registers, the tile cast and written to the consumer's own
  shared-memory buffer, then one TMA store; the store runs while the consumer starts its next tile
  (it waits for the store only before it writes the buffer again).
* stream-K (`stream_k=True`, cooperative and single only): instead of whole tiles, each row of tiles deals
  its tiles_n x k_steps K steps over its own `per_lane` CTAs (`tilewise.model.waves.stream_k_split`; CTA
  lane x per_lane + i takes steps [i x units / per_lane, (i + 1) x units / per_lane) of its row). A tile cut
  between CTAs is finished by the CTA that ran its first step: the others store their fp32 partial into a
  workspace slot and set 128 flags (one per thread, release); the owner waits on each partner's flags
  (acquire), adds the partial, clears the flags for the next launch, then runs the epilogue. The rows of
  one B column stay at the same K step in every lane, so they share B in L2 as a data-parallel wave does.
  Measured on the H200 it helps where the data-parallel grid leaves SMs idle and loses where it is nearly
  full (docs/kernels.md: it does not add bytes in flight, and those bind the mid-size shapes).

The operand layouts: B row-major [K, N] (tiles [BLOCK_K, BLOCK_N]) or a row-major weight w [N, K]
(`a @ w.T`: tiles [BLOCK_N, BLOCK_K], handed to wgmma as a transposed view, no data movement).

This module imports without a GPU; `gluon_available()` says whether the installed Triton has the
Gluon names used here, and `GLUON_VERIFIED` lists the Triton versions on which the GPU tests
passed; `tilewise.kernels.gemm.matmul` dispatches here only for those (see `unsupported`).
"""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tilewise.errors import InputError
from tilewise.model.tiles import gemm_gluon_consumers, gemm_gluon_smem_bytes, gemm_gluon_sub_m, gemm_gluon_tag
from tilewise.model.waves import stream_k_split
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

    _IMPORT_ERROR: Exception | None = None
except Exception as exc:  # pragma: no cover - depends on the installed triton
    _IMPORT_ERROR = exc

# Triton versions on which tests/gpu/test_gpu_gemm_gluon.py passed on an H200: the dispatch takes the
# Gluon kernel only for these (a version it never ran on keeps the Triton kernel). H200: 62 of 62 GPU tests at
# 7f830cd; 156 of 156 at e078dd8 (stream-K); 137 of 138 at b725470 (the split epilogue; one skipped).
GLUON_VERIFIED: tuple[str, ...] = ("3.6.0",)

SCHEDULES = ("cooperative", "pingpong", "single")
ACTIVATIONS = ("none", "relu", "gelu", "silu")
CONSUMER_WARPS = 4  # one warpgroup: the unit a wgmma is issued by


def gluon_available() -> bool:
    """True when the installed Triton has every Gluon name this kernel uses."""
    if _IMPORT_ERROR is not None:
        return False
    need = (
        (gl, "warp_specialize"),
        (gl, "NVMMADistributedLayout"),
        (gl, "NVMMASharedLayout"),
        (gl, "allocate_shared_memory"),
        (mbarrier, "MBarrierLayout"),
        (mbarrier, "expect"),
        (tma, "async_copy_global_to_shared"),
        (tma, "async_copy_shared_to_global"),
        (tma, "store_wait"),
    )
    return all(hasattr(mod, name) for mod, name in need)


# ------------------------------------------------------------------------ config


@dataclass(frozen=True)
class GluonGemmConfig:
    """One launch of the Gluon GEMM.

    block_m x block_n is what one consumer computes per tile times the consumers sharing it:
    cooperative block_m = consumers x sub_m (two warpgroups on one tile, three for 192 rows), pingpong and single
    block_m = sub_m.
    """

    block_m: int
    block_n: int
    block_k: int = 64
    stages: int = 3
    schedule: str = "cooperative"
    group_m: int = 8
    stream_k: bool = False  # deal each row of tiles' K steps over its own CTAs (`tilewise.model.waves.stream_k_split`)
    # the epilogue stores the C tile in this many column parts through one part-sized buffer per consumer: the
    # shared memory it frees buys a ring stage (128 x 256 x 64 at 4 stages: 192 KB of ring + 2 x 16 KB of C)
    epilogue_parts: int = 1
    reason: str = ""

    def __post_init__(self) -> None:
        """A combination the kernel does not build is one InputError naming it (the kernel's own static asserts
        would otherwise fail inside the compiler with a traceback)."""
        if self.schedule not in SCHEDULES:
            raise InputError(f"GluonGemmConfig.schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.stream_k and self.schedule == "pingpong":
            raise InputError("GluonGemmConfig: stream-K deals K steps to CTAs, pingpong tiles to consumers; "
                             "got stream_k=True with schedule='pingpong'")  # fmt: skip
        if self.epilogue_parts not in (1, 2) or self.block_n % (8 * self.epilogue_parts):
            raise InputError(f"GluonGemmConfig.epilogue_parts must be 1 or 2 (dividing block_n into multiples of 8), "
                             f"got {self.epilogue_parts} with block_n {self.block_n}")  # fmt: skip
        if self.stages < 2:
            raise InputError(f"GluonGemmConfig needs stages >= 2, got {self.stages}")
        # what a wgmma and a TMA box take, checked here so that a pinned config is one line, not a compiler error
        # that would turn the Gluon path off for the process (`gluon_failed`): each consumer's rows a multiple of
        # 64 (one warpgroup's wgmma M) and at most 256 (a TMA box), block_n and block_k powers of two in 16..256
        sub = self.sub_m  # the one rule, `tilewise.model.tiles.gemm_gluon_sub_m`
        if self.block_m <= 0 or self.block_m % self.consumers or sub % 64 or sub > 256:
            raise InputError(f"GluonGemmConfig.block_m must give each of the {self.consumers} consumer warpgroups a "
                             f"multiple of 64 rows, at most 256 ({self.schedule}), got block_m {self.block_m}")  # fmt: skip
        for name, v in (("block_n", self.block_n), ("block_k", self.block_k)):
            if not (16 <= v <= 256 and v & (v - 1) == 0):
                raise InputError(f"GluonGemmConfig.{name} must be a power of two from 16 to 256, got {v}")

    @property
    def consumers(self) -> int:
        """Consumer warpgroups (`tilewise.model.tiles.gemm_gluon_consumers`: cooperative 192-row tiles take 3)."""
        return gemm_gluon_consumers(self.as_dict())

    @property
    def sub_m(self) -> int:
        """Rows of one consumer's accumulator."""
        return gemm_gluon_sub_m(self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        """The advisor's spelling (`tilewise.advise.space.gemm_gluon_space` entries)."""
        return {"schedule": self.schedule, "block_m": self.block_m, "block_n": self.block_n,
                "block_k": self.block_k, "num_stages": self.stages, "group_m": self.group_m,
                "stream_k": self.stream_k, "epilogue_parts": self.epilogue_parts}  # fmt: skip

    def tag(self) -> str:
        return gemm_gluon_tag(self.as_dict())


def config_from_dict(c: dict[str, Any]) -> GluonGemmConfig:
    return GluonGemmConfig(
        block_m=int(c["block_m"]),
        block_n=int(c["block_n"]),
        block_k=int(c["block_k"]),
        stages=int(c["num_stages"]),
        schedule=str(c["schedule"]),
        group_m=int(c.get("group_m", 8)),
        stream_k=bool(c.get("stream_k", False)),
        epilogue_parts=int(c.get("epilogue_parts", 1)),
    )


# Registers: setmaxnreg moves them per warpgroup; the producer's single warp counts as one. 65,536 per SM
# less 128 x 40 for the producer over the 2 consumer warpgroups' 256 threads = 236 -> 232 (a multiple of 8);
# over 3 warpgroups' 384 threads 157 -> 152 (a 64 x 128 accumulator is 64 of them).
PRODUCER_REGS = 40
CONSUMER_REGS = 232
CONSUMER_REGS_3 = 152


# ------------------------------------------------------------------------ kernel

if _IMPORT_ERROR is None:

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _tile_mn(t, tiles_m, tiles_n, GROUP_M: gl.constexpr):  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
        """Tile t of the grouped raster: GROUP_M row tiles walk the same column of B tiles."""
        per_group = GROUP_M * tiles_n
        g = t // per_group
        first_m = g * GROUP_M
        rows = gl.minimum(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (t % per_group) % rows
        pid_n = (t % per_group) // rows
        return pid_m, pid_n

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _sk_lane(per_lane, tiles_n, k_steps):  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
        """(lane = row of tiles, i = this CTA's place in it, its steps [u, end) of the lane's tiles_n x k_steps)
        (`tilewise.model.waves.StreamKSplit.start`)."""
        pid = gl.program_id(0)
        lane = pid // per_lane
        i = pid % per_lane
        units = tiles_n * k_steps
        return lane, i, (i * units) // per_lane, ((i + 1) * units) // per_lane

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _load_steps(a_desc, b_desc, a_smem, b_smem, full, empty, om, on, k0, k1, count,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                    SUB_M: gl.constexpr, BLOCK_K: gl.constexpr, A_PARTS: gl.constexpr, STAGES: gl.constexpr,
                    B_T: gl.constexpr):  # fmt: skip
        """The producer's K steps k0..k1 - 1 of one tile into the ring; returns the ring count after them."""
        nbytes: gl.constexpr = A_PARTS * a_desc.block_type.nbytes + b_desc.block_type.nbytes
        for kk in range(k0, k1):
            s = count % STAGES
            mbarrier.wait(empty.index(s), ((count // STAGES) & 1) ^ 1)  # a fresh barrier passes phase 1
            bar = full.index(s)
            mbarrier.expect(bar, nbytes)
            kc = kk * BLOCK_K
            for p in gl.static_range(A_PARTS):
                tma.async_copy_global_to_shared(a_desc, [om + p * SUB_M, kc], bar, a_smem.index(s * A_PARTS + p))
            if B_T:
                tma.async_copy_global_to_shared(b_desc, [on, kc], bar, b_smem.index(s))
            else:
                tma.async_copy_global_to_shared(b_desc, [kc, on], bar, b_smem.index(s))
            count += 1
        return count

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _producer(a_desc, b_desc, a_smem, b_smem, full, empty, tiles_m, tiles_n, k_steps, dp_tiles, per_lane,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                  SUB_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, A_PARTS: gl.constexpr,
                  STAGES: gl.constexpr, GROUP_M: gl.constexpr, B_T: gl.constexpr, STREAM_K: gl.constexpr):  # fmt: skip
        pid = gl.program_id(0)
        nprog = gl.num_programs(0)
        count = 0
        for t in range(pid, dp_tiles, nprog):
            pid_m, pid_n = _tile_mn(t, tiles_m, tiles_n, GROUP_M)
            count = _load_steps(a_desc, b_desc, a_smem, b_smem, full, empty, pid_m * (SUB_M * A_PARTS),
                                pid_n * BLOCK_N, 0, k_steps, count, SUB_M, BLOCK_K, A_PARTS, STAGES, B_T)  # fmt: skip
        if STREAM_K:
            lane, _i, u, end = _sk_lane(per_lane, tiles_n, k_steps)
            while u < end:
                k0 = u % k_steps
                k1 = k0 + (end - u)
                if k1 > k_steps:
                    k1 = k_steps
                count = _load_steps(a_desc, b_desc, a_smem, b_smem, full, empty, lane * (SUB_M * A_PARTS),
                                    (u // k_steps) * BLOCK_N, k0, k1, count, SUB_M, BLOCK_K, A_PARTS, STAGES, B_T)  # fmt: skip
                u += k1 - k0

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _epilogue_math(acc, bias_ptr, on, N, ACC_LAYOUT: gl.constexpr, BLOCK_N: gl.constexpr,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                       HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr):  # fmt: skip
        """bias + activation in fp32, the same formulas as `tilewise.kernels.gemm` (gelu: tanh form)."""
        if HAS_BIAS:
            offs_n = on + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, ACC_LAYOUT))
            bias = gl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(gl.float32)
            acc = acc + gl.expand_dims(bias, 0)
        if ACTIVATION == "relu":
            acc = gl.maximum(acc, 0.0)
        elif ACTIVATION == "gelu":
            inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
            acc = 0.5 * acc * (1.0 + (2.0 / (1.0 + gl.exp(-2.0 * inner)) - 1.0))
        elif ACTIVATION == "silu":
            acc = acc / (1.0 + gl.exp(-acc))
        return acc

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _mma_steps(a_smem, b_smem, full, empty, acc, k0, k1, count, C: gl.constexpr, A_PARTS: gl.constexpr,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                   STAGES: gl.constexpr, B_T: gl.constexpr):  # fmt: skip
        """One consumer's K steps k0..k1 - 1 on `acc`; returns (acc, ring count after them)."""
        prev = 0
        for kk in range(k0, k1):
            s = count % STAGES
            mbarrier.wait(full.index(s), (count // STAGES) & 1)
            a = a_smem.index(s * A_PARTS + (C if A_PARTS > 1 else 0))
            if B_T:
                b = b_smem.index(s).permute((1, 0))
            else:
                b = b_smem.index(s)
            acc = warpgroup_mma(a, b, acc, is_async=True)
            # one wgmma group stays in flight: the one of step kk - 1 has retired, its stage is free
            acc = warpgroup_mma_wait(1, deps=(acc,))
            if kk > k0:
                mbarrier.arrive(empty.index(prev))
            prev = s
            count += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        if k1 > k0:
            mbarrier.arrive(empty.index(prev))
        return acc, count

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _tma_store(part, c_buf, c_desc, om, on):  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
        """One part of the tile out through c_buf: wait until the TMA engine has read c_buf's previous contents,
        write it, fence the generic-proxy writes for the async proxy, start the store."""
        tma.store_wait(0)
        c_buf.store(part.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [om, on], c_buf)

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _store_tile(acc, c_buf, c_desc, bias_ptr, om, on, N, ACC_LAYOUT: gl.constexpr, BLOCK_N: gl.constexpr,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                    HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr, EPI_PARTS: gl.constexpr):  # fmt: skip
        """The epilogue: bias and activation, the tile through the consumer's buffer and out by TMA stores
        (the last runs on while the consumer starts its next tile: it waits only before it writes c_buf again).
        EPI_PARTS = 2: the left and right halves one after the other through a half-tile buffer (the columns'
        high bit is a register index of the wgmma layout, so the split moves no data)."""
        acc = _epilogue_math(acc, bias_ptr, on, N, ACC_LAYOUT, BLOCK_N, HAS_BIAS, ACTIVATION)
        if EPI_PARTS == 1:
            _tma_store(acc, c_buf, c_desc, om, on)  # waits for the previous tile's store to leave c_buf
        else:
            gl.static_assert(EPI_PARTS == 2)
            half: gl.constexpr = BLOCK_N // 2
            left, right = acc.reshape([acc.shape[0], 2, half]).permute(0, 2, 1).split()
            _tma_store(left, c_buf, c_desc, om, on)
            _tma_store(right, c_buf, c_desc, om, on + half)  # waits for the left half to leave c_buf

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _sk_slot(ws_ptr, flag_ptr, cta, C: gl.constexpr, CONSUMERS: gl.constexpr, SUB_M: gl.constexpr,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                 BLOCK_N: gl.constexpr, ACC_LAYOUT: gl.constexpr):  # fmt: skip
        """Pointers of CTA `cta`'s partial for consumer C (fp32, in the accumulator's layout) and of its 128 flags,
        one per thread of the warpgroup: thread i of the owner reads exactly the elements thread i of the writer
        stored (the same layout), so each thread's release/acquire pair orders its own elements, no barrier."""
        slot = cta * CONSUMERS + C
        rows = gl.arange(0, SUB_M, layout=gl.SliceLayout(1, ACC_LAYOUT))
        cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, ACC_LAYOUT))
        ptrs = ws_ptr + slot * (SUB_M * BLOCK_N) + gl.expand_dims(rows, 1) * BLOCK_N + gl.expand_dims(cols, 0)
        flag_layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        flags = flag_ptr + slot * 128 + gl.arange(0, 128, layout=flag_layout)
        return ptrs, flags

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _sk_fixup(acc, ws_ptr, flag_ptr, lane, i, per_lane, units, tile_end, is_owner, C: gl.constexpr,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                  CONSUMERS: gl.constexpr, SUB_M: gl.constexpr, BLOCK_N: gl.constexpr, ACC_LAYOUT: gl.constexpr):  # fmt: skip
        """A stream-K tile's partials. A CTA that ran a later part of the tile (not its first K step) writes its
        fp32 partial and sets its flags; the owner (which ran the first step) waits for each later CTA of the lane
        whose range starts inside the tile, adds its partial and clears its flags for the next launch. The
        writers ran that part first in their own range, so the owner never waits on a CTA that waits."""
        flag_layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        zeros = gl.zeros([128], gl.int32, layout=flag_layout)
        if is_owner:
            other = i + 1
            while (other * units) // per_lane < tile_end:
                ptrs, flags = _sk_slot(ws_ptr, flag_ptr, lane * per_lane + other, C, CONSUMERS, SUB_M, BLOCK_N,
                                       ACC_LAYOUT)  # fmt: skip
                seen = gl.atomic_add(flags, zeros, sem="acquire", scope="gpu")
                while gl.min(seen, axis=0) == 0:
                    seen = gl.atomic_add(flags, zeros, sem="acquire", scope="gpu")
                acc = acc + gl.load(ptrs)
                gl.atomic_xchg(flags, zeros, sem="relaxed", scope="gpu")
                other += 1
        else:
            ptrs, flags = _sk_slot(ws_ptr, flag_ptr, lane * per_lane + i, C, CONSUMERS, SUB_M, BLOCK_N, ACC_LAYOUT)
            gl.store(ptrs, acc)
            gl.atomic_xchg(flags, zeros + 1, sem="release", scope="gpu")
        return acc

    @gluon.jit  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _consumer(a_smem, b_smem, c_smem, full, empty, turn, c_desc, bias_ptr, ws_ptr, flag_ptr, N, tiles_m,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                  tiles_n, k_steps, dp_tiles, per_lane, C: gl.constexpr, SUB_M: gl.constexpr,
                  BLOCK_N: gl.constexpr, A_PARTS: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                  PINGPONG: gl.constexpr, B_T: gl.constexpr, HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr,
                  STREAM_K: gl.constexpr, CONSUMERS: gl.constexpr, EPI_PARTS: gl.constexpr):  # fmt: skip
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16]
        )
        pid = gl.program_id(0)
        nprog = gl.num_programs(0)
        c_buf = c_smem.index(C)
        row0: gl.constexpr = C * SUB_M if A_PARTS > 1 else 0
        count = 0
        local = 0
        for t in range(pid, dp_tiles, nprog):
            mine = True
            if PINGPONG:
                mine = (local % 2) == C
            if mine:
                if PINGPONG:
                    # the consumers' main loops take turns (c0 tile 0, c1 tile 1, c0 tile 2, ...): the stages
                    # of a tile are waited for only after the other consumer waited for the previous tile's,
                    # so no consumer waits on a stage barrier more than one phase ahead of its fills (a parity
                    # wait two phases ahead would pass on an old phase)
                    mbarrier.wait(turn.index(C), ((local // 2) & 1) ^ (1 - C))
                pid_m, pid_n = _tile_mn(t, tiles_m, tiles_n, GROUP_M)
                acc = gl.zeros([SUB_M, BLOCK_N], gl.float32, layout=acc_layout)
                acc, count = _mma_steps(a_smem, b_smem, full, empty, acc, 0, k_steps, count, C, A_PARTS, STAGES, B_T)
                if PINGPONG:
                    mbarrier.arrive(turn.index(1 - C))  # this epilogue now overlaps the other's main loop
                _store_tile(acc, c_buf, c_desc, bias_ptr, pid_m * (SUB_M * A_PARTS) + row0, pid_n * BLOCK_N, N,
                            acc_layout, BLOCK_N, HAS_BIAS, ACTIVATION, EPI_PARTS)  # fmt: skip
            else:
                count += k_steps  # the other consumer's tile: its stages pass by in the ring
            local += 1
        if STREAM_K:
            lane, i, u, end = _sk_lane(per_lane, tiles_n, k_steps)
            while u < end:
                k0 = u % k_steps
                k1 = k0 + (end - u)
                if k1 > k_steps:
                    k1 = k_steps
                pid_n = u // k_steps
                acc = gl.zeros([SUB_M, BLOCK_N], gl.float32, layout=acc_layout)
                acc, count = _mma_steps(a_smem, b_smem, full, empty, acc, k0, k1, count, C, A_PARTS, STAGES, B_T)
                if k0 > 0 or k1 < k_steps:
                    acc = _sk_fixup(acc, ws_ptr, flag_ptr, lane, i, per_lane, tiles_n * k_steps, (pid_n + 1) * k_steps,
                                    k0 == 0, C, CONSUMERS, SUB_M, BLOCK_N, acc_layout)  # fmt: skip
                if k0 == 0:
                    _store_tile(acc, c_buf, c_desc, bias_ptr, lane * (SUB_M * A_PARTS) + row0, pid_n * BLOCK_N,
                                N, acc_layout, BLOCK_N, HAS_BIAS, ACTIVATION, EPI_PARTS)  # fmt: skip
                u += k1 - k0
        tma.store_wait(0)

    @gluon.jit(do_not_specialize=["N", "tiles_m", "tiles_n", "k_steps", "dp_tiles", "per_lane"])  # type: ignore[untyped-decorator]  # gluon is read as Any (unchecked)
    def _gemm_gluon_kernel(a_desc, b_desc, c_desc, bias_ptr, ws_ptr, flag_ptr, N, tiles_m, tiles_n, k_steps,  # type: ignore[no-untyped-def]  # a Gluon kernel: Gluon types its arguments
                           dp_tiles, per_lane, SUB_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                           STAGES: gl.constexpr, GROUP_M: gl.constexpr, CONSUMERS: gl.constexpr,
                           PINGPONG: gl.constexpr, B_T: gl.constexpr, HAS_BIAS: gl.constexpr,
                           ACTIVATION: gl.constexpr, STREAM_K: gl.constexpr, EPI_PARTS: gl.constexpr,
                           PRODUCER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr):  # fmt: skip
        gl.static_assert(CONSUMERS >= 1 and CONSUMERS <= 3)
        gl.static_assert(not (PINGPONG and CONSUMERS != 2))
        gl.static_assert(STAGES >= 2)
        gl.static_assert(not (STREAM_K and PINGPONG))  # stream-K deals steps to CTAs, pingpong tiles to consumers
        dtype: gl.constexpr = a_desc.dtype
        # cooperative: the CTA tile is CONSUMERS x SUB_M rows, loaded as that many SUB_M-row parts
        A_PARTS: gl.constexpr = CONSUMERS if (CONSUMERS >= 2 and not PINGPONG) else 1
        a_smem = gl.allocate_shared_memory(dtype, [STAGES * A_PARTS] + a_desc.block_type.shape, a_desc.layout)  # noqa: RUF005
        b_smem = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)  # noqa: RUF005
        c_smem = gl.allocate_shared_memory(dtype, [CONSUMERS] + c_desc.block_type.shape, c_desc.layout)  # noqa: RUF005
        bar_layout: gl.constexpr = mbarrier.MBarrierLayout()
        full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
        empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], bar_layout)
        turn = gl.allocate_shared_memory(gl.int64, [2, 1], bar_layout)
        mbarrier.init(turn.index(0), count=1)
        mbarrier.init(turn.index(1), count=1)
        for s in gl.static_range(STAGES):
            mbarrier.init(full.index(s), count=1)
            # cooperative: both consumers read every stage; pingpong / single: one consumer does
            mbarrier.init(empty.index(s), count=A_PARTS)
        fence_async_shared()

        # (tuples are written out: Gluon 3.6 keeps constexprs only in literal argument tuples)
        zero: gl.constexpr = 0
        one: gl.constexpr = 1
        two: gl.constexpr = 2
        if CONSUMERS == 3:
            gl.warp_specialize(
                [
                    (_consumer, (a_smem, b_smem, c_smem, full, empty, turn, c_desc, bias_ptr, ws_ptr, flag_ptr, N, tiles_m,
                                 tiles_n, k_steps, dp_tiles, per_lane, zero, SUB_M, BLOCK_N, A_PARTS, STAGES, GROUP_M,
                                 PINGPONG, B_T, HAS_BIAS, ACTIVATION, STREAM_K, CONSUMERS, EPI_PARTS)),
                    (_consumer, (a_smem, b_smem, c_smem, full, empty, turn, c_desc, bias_ptr, ws_ptr, flag_ptr, N, tiles_m,
                                 tiles_n, k_steps, dp_tiles, per_lane, one, SUB_M, BLOCK_N, A_PARTS, STAGES, GROUP_M,
                                 PINGPONG, B_T, HAS_BIAS, ACTIVATION, STREAM_K, CONSUMERS, EPI_PARTS)),
                    (_consumer, (a_smem, b_smem, c_smem, full, empty, turn, c_desc, bias_ptr, ws_ptr, flag_ptr, N, tiles_m,
                                 tiles_n, k_steps, dp_tiles, per_lane, two, SUB_M, BLOCK_N, A_PARTS, STAGES, GROUP_M,
                                 PINGPONG, B_T, HAS_BIAS, ACTIVATION, STREAM_K, CONSUMERS, EPI_PARTS)),
                    (_producer, (a_desc, b_desc, a_smem, b_smem, full, empty, tiles_m, tiles_n, k_steps, dp_tiles,
                                 per_lane, SUB_M, BLOCK_N, BLOCK_K, A_PARTS, STAGES, GROUP_M, B_T, STREAM_K)),
                ],
                [4, 4, 1],
                [CONSUMER_REGS, CONSUMER_REGS, PRODUCER_REGS],
            )  # fmt: skip
        elif CONSUMERS == 2:
            gl.warp_specialize(
                [
                    (_consumer, (a_smem, b_smem, c_smem, full, empty, turn, c_desc, bias_ptr, ws_ptr, flag_ptr, N, tiles_m,
                                 tiles_n, k_steps, dp_tiles, per_lane, zero, SUB_M, BLOCK_N, A_PARTS, STAGES, GROUP_M,
                                 PINGPONG, B_T, HAS_BIAS, ACTIVATION, STREAM_K, CONSUMERS, EPI_PARTS)),
                    (_consumer, (a_smem, b_smem, c_smem, full, empty, turn, c_desc, bias_ptr, ws_ptr, flag_ptr, N, tiles_m,
                                 tiles_n, k_steps, dp_tiles, per_lane, one, SUB_M, BLOCK_N, A_PARTS, STAGES, GROUP_M,
                                 PINGPONG, B_T, HAS_BIAS, ACTIVATION, STREAM_K, CONSUMERS, EPI_PARTS)),
                    (_producer, (a_desc, b_desc, a_smem, b_smem, full, empty, tiles_m, tiles_n, k_steps, dp_tiles,
                                 per_lane, SUB_M, BLOCK_N, BLOCK_K, A_PARTS, STAGES, GROUP_M, B_T, STREAM_K)),
                ],
                [4, 1],
                [CONSUMER_REGS, PRODUCER_REGS],
            )  # fmt: skip
        else:
            gl.warp_specialize(
                [
                    (_consumer, (a_smem, b_smem, c_smem, full, empty, turn, c_desc, bias_ptr, ws_ptr, flag_ptr, N, tiles_m,
                                 tiles_n, k_steps, dp_tiles, per_lane, zero, SUB_M, BLOCK_N, A_PARTS, STAGES, GROUP_M,
                                 PINGPONG, B_T, HAS_BIAS, ACTIVATION, STREAM_K, CONSUMERS, EPI_PARTS)),
                    (_producer, (a_desc, b_desc, a_smem, b_smem, full, empty, tiles_m, tiles_n, k_steps, dp_tiles,
                                 per_lane, SUB_M, BLOCK_N, BLOCK_K, A_PARTS, STAGES, GROUP_M, B_T, STREAM_K)),
                ],
                [1],
                [PRODUCER_REGS],
            )  # fmt: skip


# ---------------------------------------------------------------------------- checks and dispatch


def smem_bytes(cfg: GluonGemmConfig, elem_bytes: int = 2) -> int:
    """Shared memory of one CTA (`tilewise.model.tiles.gemm_gluon_smem_bytes`, the fit rule's count)."""
    return gemm_gluon_smem_bytes(cfg.as_dict(), elem_bytes)


def _tma_rows(t: torch.Tensor) -> bool:
    """A 2-D TMA descriptor: unit last stride, 16-byte aligned base and row stride."""
    return bool(t.stride(1) == 1 and (t.stride(0) * t.element_size()) % 16 == 0 and t.data_ptr() % 16 == 0)


def _b_transposed(b: torch.Tensor) -> bool:
    return bool(b.stride(1) != 1 and b.stride(0) == 1)


@functools.lru_cache(maxsize=16)
def _device_ok(index: int) -> bool:
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)

    return bool(torch.cuda.get_device_capability(index) == (9, 0))


@functools.lru_cache(maxsize=16)
def _sm_count(index: int) -> int:
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)

    return int(torch.cuda.get_device_properties(index).multi_processor_count)


_FAILED: list[str] = []  # the first failure; the Gluon path is off afterwards


def gluon_failed(exc: BaseException) -> str:
    """Called by the dispatch when the Gluon kernel raised (compile error, out of resources): turn it off,
    warn once. Returns the reason the plan records."""
    if not _FAILED:
        _FAILED.append(f"{type(exc).__name__}: {str(exc)[:500]}")
        warnings.warn(
            f"tilewise: the Gluon GEMM kernel failed ({_FAILED[0][:200]}); using the Triton kernel",
            RuntimeWarning,
            stacklevel=3,
        )
    return f"the Gluon kernel failed earlier ({_FAILED[0][:120]})"


def unsupported(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias: torch.Tensor | None) -> str:
    """'' when the Gluon kernel can run on these (already checked) tensors, else why not (the plan records it).

    Hopper (sm 9.0), a Triton version the GPU tests passed on (`GLUON_VERIFIED`) with the Gluon names this
    file uses, fp16/bf16, TMA-compatible A, B (or w for `a @ w.T`) and C; TILEWISE_GLUON=0 turns it off.
    """
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)

    if os.environ.get("TILEWISE_GLUON", "1") == "0":
        return "TILEWISE_GLUON=0"
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        return "the Triton interpreter does not run Gluon"
    if _FAILED:
        return f"the Gluon kernel failed earlier ({_FAILED[0][:120]})"
    if _IMPORT_ERROR is not None or not gluon_available():
        return "this Triton has no Gluon Hopper API"
    if triton.__version__ not in GLUON_VERIFIED:
        return f"triton {triton.__version__} is not one the Gluon GEMM was verified on ({', '.join(GLUON_VERIFIED)})"
    if not a.is_cuda or not _device_ok(a.device.index if a.device.index is not None else torch.cuda.current_device()):
        return "not a Hopper (sm 9.0) GPU"
    if a.dtype not in (torch.float16, torch.bfloat16):
        return f"{a.dtype} (the Gluon kernel takes fp16/bf16)"
    bb = b.t() if _b_transposed(b) else b
    for name, t in (("a", a), ("b" if bb is b else "w = b.T", bb), ("out", c)):
        if not _tma_rows(t):
            return f"{name} is not TMA-compatible (unit last stride, 16-byte aligned base and rows)"
    if bias is not None and not bias.is_contiguous():
        return "bias is not contiguous"
    return ""


# ---------------------------------------------------------------------------- launcher


def launch_split(cfg: GluonGemmConfig, tiles_m: int, tiles_n: int, k_steps: int, num_sms: int) -> tuple[int, int, int]:
    """(grid, dp_tiles, per_lane): data-parallel, every tile whole on one CTA per SM (or per tile, if fewer);
    stream-K (`tilewise.model.waves.stream_k_split`), every step dealt out, lanes x per_lane CTAs."""
    if cfg.stream_k:
        sk = stream_k_split(tiles_m, tiles_n, k_steps, num_sms)
        return sk.grid, 0, sk.per_lane
    tiles = tiles_m * tiles_n
    return min(num_sms, tiles), tiles, 1


_FLAGS: dict[tuple[int, int], torch.Tensor] = {}  # (device, stream) -> zeroed stream-K flags


def _flags(device: torch.device, count: int) -> torch.Tensor:
    """The stream-K flags, all zero between launches: each owner clears the flags it waited on, so one zeroed
    buffer per device and stream serves every launch (two streams at once would share one, so each has its
    own). Under CUDA-graph capture a fresh zeroed buffer is made and not kept (the capture records its memset)."""
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)

    stream = torch.cuda.current_stream(device)
    key = (device.index if device.index is not None else torch.cuda.current_device(), stream.cuda_stream)
    have = _FLAGS.get(key)
    if have is not None and have.numel() >= count:
        return have
    if torch.cuda.is_current_stream_capturing():
        return torch.zeros(count, dtype=torch.int32, device=device)
    # room for a full grid of three-consumer CTAs, so a later launch with more CTAs does not reallocate
    _FLAGS[key] = torch.zeros(max(count, _sm_count(key[0]) * 3 * 128), dtype=torch.int32, device=device)
    return _FLAGS[key]


def _layout(block: list[int], torch_dtype: torch.dtype) -> Any:
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)

    gdt = gl.bfloat16 if torch_dtype == torch.bfloat16 else gl.float16
    return gl.NVMMASharedLayout.get_default_for(block, gdt)


def kernel_constexprs(cfg: GluonGemmConfig, b_t: bool, has_bias: bool, activation: str) -> dict[str, Any]:
    return dict(
        SUB_M=cfg.sub_m,
        BLOCK_N=cfg.block_n,
        BLOCK_K=cfg.block_k,
        STAGES=cfg.stages,
        GROUP_M=cfg.group_m,
        CONSUMERS=cfg.consumers,
        PINGPONG=cfg.schedule == "pingpong",
        B_T=bool(b_t),
        HAS_BIAS=bool(has_bias),
        ACTIVATION=activation,
        STREAM_K=bool(cfg.stream_k),
        EPI_PARTS=int(cfg.epilogue_parts),
        PRODUCER_REGS=PRODUCER_REGS,
        CONSUMER_REGS=CONSUMER_REGS_3 if cfg.consumers == 3 else CONSUMER_REGS,
    )


def blocks(cfg: GluonGemmConfig, b_t: bool) -> tuple[list[int], list[int], list[int]]:
    """TMA boxes of A, B (or w) and C."""
    bb = [cfg.block_n, cfg.block_k] if b_t else [cfg.block_k, cfg.block_n]
    return [cfg.sub_m, cfg.block_k], bb, [cfg.sub_m, cfg.block_n // cfg.epilogue_parts]


def gluon_matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    cfg: GluonGemmConfig,
    *,
    out: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    activation: str = "none",
    num_sms: int | None = None,
) -> torch.Tensor:
    """C = activation(A @ B + bias) with the Gluon kernel. Inputs as `tilewise.kernels.gemm.matmul`, already
    checked there and accepted by `unsupported`: a [M, K], b [K, N] (or w.T), fp16/bf16, TMA-compatible."""
    import torch  # deferred: the module imports with Triton alone (compile_sm90 needs no torch)
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor  # deferred: Gluon's host API, at launch only

    m, k = a.shape
    n = b.shape[1]
    c = out if out is not None else torch.empty((m, n), dtype=a.dtype, device=a.device)
    b_t = _b_transposed(b)
    ba, bb, bc = blocks(cfg, b_t)
    a_desc = TensorDescriptor.from_tensor(a, ba, _layout(ba, a.dtype))
    bsrc = b.t() if b_t else b
    b_desc = TensorDescriptor.from_tensor(bsrc, bb, _layout(bb, a.dtype))
    c_desc = TensorDescriptor.from_tensor(c, bc, _layout(bc, a.dtype))
    tiles_m, tiles_n = cdiv(m, cfg.block_m), cdiv(n, cfg.block_n)
    if num_sms is None:
        num_sms = _sm_count(a.device.index if a.device.index is not None else torch.cuda.current_device())
    k_steps = cdiv(k, cfg.block_k)
    grid, dp_tiles, per_lane = launch_split(cfg, tiles_m, tiles_n, k_steps, num_sms)
    if cfg.stream_k:
        ws = torch.empty(grid * cfg.block_m * cfg.block_n, dtype=torch.float32, device=a.device)
        flags = _flags(a.device, grid * cfg.consumers * 128)
    else:
        ws, flags = c, c  # not read: the kernel's stream-K part is compiled out
    _gemm_gluon_kernel[(grid,)](
        a_desc, b_desc, c_desc, bias if bias is not None else c, ws, flags, n, tiles_m, tiles_n, k_steps,
        dp_tiles, per_lane, num_warps=CONSUMER_WARPS,
        **kernel_constexprs(cfg, b_t, bias is not None, activation),
    )  # fmt: skip
    return c


def compile_sm90(cfg: GluonGemmConfig, dtype: str = "bf16", b_t: bool = False, has_bias: bool = False,
                 activation: str = "none") -> dict[str, Any]:  # fmt: skip
    """Build the kernel for sm_90a without a GPU (only Triton; its wheel carries ptxas): shared memory per CTA
    and the compiled object (tests and the config check use it; a config that does not build is caught here)."""
    from triton.backends.compiler import GPUTarget  # deferred: only the offline sm_90a build uses the compiler API
    from triton.experimental.gluon._runtime import GluonASTSource  # (as above)

    tname = {"bf16": "bf16", "fp16": "fp16"}[dtype]
    gdt = gl.bfloat16 if dtype == "bf16" else gl.float16
    consts = kernel_constexprs(cfg, b_t, has_bias, activation)

    def dsig(block: list[int]) -> str:
        return f"tensordesc<{tname}[{','.join(map(str, block))}],{gl.NVMMASharedLayout.get_default_for(block, gdt)!r}>"

    ba, bb, bc = blocks(cfg, b_t)
    sig = {"a_desc": dsig(ba), "b_desc": dsig(bb), "c_desc": dsig(bc), "bias_ptr": f"*{tname}", "ws_ptr": "*fp32",
           "flag_ptr": "*i32"}  # fmt: skip
    for name in ("N", "tiles_m", "tiles_n", "k_steps", "dp_tiles", "per_lane"):
        sig[name] = "i32"
    for name in consts:
        sig[name] = "constexpr"
    src = GluonASTSource(_gemm_gluon_kernel, sig, consts)
    kern = triton.compile(src, target=GPUTarget("cuda", 90, 128), options={"num_warps": CONSUMER_WARPS})
    return {"tag": cfg.tag(), "shared_bytes": kern.metadata.shared, "asm": kern.asm}


__all__ = [
    "GLUON_VERIFIED",
    "SCHEDULES",
    "GluonGemmConfig",
    "compile_sm90",
    "config_from_dict",
    "gluon_available",
    "gluon_failed",
    "gluon_matmul",
    "launch_split",
    "smem_bytes",
    "unsupported",
]
