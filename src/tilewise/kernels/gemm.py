"""GEMM: C[M, N] = A[M, K] @ B[K, N] (+ bias, activation), output-stationary tiles in Triton.

The kernel this file grows from is the textbook output-stationary GEMM: each program
owns one BLOCK_M x BLOCK_N tile of C, walks K in BLOCK_K steps with its fp32 accumulator in
registers and writes C once (one write of C instead of K / BLOCK_K). The rungs on top
of it, and each one is here for a measured reason (tests/data/tuning/gemm.md has the rows):

* grouped tile order (GROUP_M row tiles walk the same B columns while they sit in L2);
* software pipelining (`num_stages` shared-memory buffers: a ring buffer the loads run ahead into);
* TMA descriptors, a persistent grid (one program per SM looping over tiles) and warp
  specialization (producer warps feeding consumer warps: 1 producer + consumer warpgroups)
  for the compute-bound shapes;
* for the skinny, memory-bound shapes (the decode GEMM's M = 64: 192 tiles of 64 x 128 on 132 SMs
  is 1.45 waves) wide 64 x 256 tiles that keep enough bytes in flight and re-read A few times,
  and split-K with an in-kernel serial fix-up only where a grid has too few programs;
* wide loads and stores whatever the shape: strides, wrap points and the sizes the masks compare
  with (M, N, K) are passed with their power-of-two factor as a compile-time constant (N = 5000:
  16-byte stores instead of 2-byte ones; 3000 x 5000 x 128 went from 82.8 to 20.2 us, cuBLAS 19.8),
  the K remainder is one masked step after an unmasked main loop, and operands of >= 1 MiB whose
  rows cannot be read 16 bytes at a time are copied to padded rows;
* the persistent TMA kernel takes both layouts (`a @ w.T`: it describes w [N, K] and multiplies by
  the transposed tiles) and grids of fewer tiles than SMs (one tile per program).

Layout: helpers -> config choice (reads `tilewise.model`) -> `_matmul_kernel` /
`_matmul_tma_persistent_kernel` -> launchers with checks -> `matmul`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

import torch
import triton
import triton.language as tl

from tilewise import gpus as _gpus
from tilewise.advise import advise
from tilewise.advise.space import gemm_gluon_space
from tilewise.errors import InputError
from tilewise.kernels import gemm_gluon
from tilewise.kernels.utils import Launcher, PlanCache, capability, counters, gpu_key, interpreting, sm_count
from tilewise.model import predict, traffic, waves
from tilewise.model.occupancy import occupancy
from tilewise.util import cdiv

try:  # host-side TMA descriptors (triton >= 3.4)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - older triton
    TensorDescriptor = None

_DTYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
_TL_DTYPES = {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float32: tl.float32}
ACTIVATIONS = ("none", "relu", "gelu", "silu")


# --------------------------------------------------------------------------- config choice


@dataclasses.dataclass(frozen=True)
class Config:
    """One launch configuration. `split_k` > 1 splits K over that many programs per tile;
    `persistent` launches one program per SM slot looping over tiles through TMA descriptors."""

    block_m: int
    block_n: int
    block_k: int
    group_m: int = 8
    split_k: int = 1
    num_warps: int = 4
    num_stages: int = 4
    persistent: bool = False
    reason: str = ""
    warp_specialize: bool = False  # persistent only: producer/consumer warps (triton >= 3.5 on Hopper)
    stream_b: bool = False  # B is read once: evict it first from L2, keep A (read by every program)

    def tag(self) -> str:
        p = ("pws" if self.warp_specialize else "p") if self.persistent else ("sb" if self.stream_b else "")
        return (
            f"{p}{self.block_m}x{self.block_n}x{self.block_k}_g{self.group_m}_s{self.split_k}"
            f"_w{self.num_warps}_st{self.num_stages}"
        )


def _tiles(m: int, n: int, bm: int, bn: int) -> int:
    return cdiv(m, bm) * cdiv(n, bn)


def choose_split_k(m: int, n: int, k: int, bm: int, bn: int, bk: int, sms: int, blocks_per_sm: int) -> int:
    """The smallest split of K that fills the machine (a last wave at least 3/4 full).

    With too few tiles the grid leaves SMs idle: the decode GEMM 64 x 24576 with 64 x 128
    tiles is 192 blocks on 132 SMs, 1.45 waves (`model.waves.grid_waves`). Splitting K
    multiplies the blocks; each split keeps at least 8 BLOCK_K steps so the pipeline's
    prologue stays small next to its main loop (a short main loop spends its time filling and draining the pipeline).
    """
    tiles = _tiles(m, n, bm, bn)
    k_steps = cdiv(k, bk)
    best, best_eff = 1, waves.grid_waves(tiles, sms, blocks_per_sm).efficiency
    for s in (2, 3, 4, 6, 8, 12, 16):
        if k_steps // s < 8:
            break
        eff = waves.grid_waves(tiles * s, sms, blocks_per_sm).efficiency
        if eff > best_eff + 0.05:
            best, best_eff = s, eff
    return best


def _smem_bytes(bm: int, bn: int, bk: int, stages: int, e: int) -> int:
    """Shared memory of the software pipeline: `stages` buffers of an A and a B tile."""
    return stages * (bm * bk + bk * bn) * e


def blocks_per_sm(gpu: str, cfg: Config, e: int) -> int:
    """Programs resident per SM (`model.occupancy`), with registers estimated from the
    accumulator (BLOCK_M x BLOCK_N fp32 over the block's threads) plus ~48 for addresses."""
    threads = 32 * cfg.num_warps
    regs = min(255, 48 + cfg.block_m * cfg.block_n // threads)
    smem = _smem_bytes(cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_stages, e)
    try:
        return max(1, occupancy(gpu, threads=threads, registers=regs, dynamic_smem=smem).blocks_per_sm)
    except InputError:
        return 1


def bytes_in_flight(cfg: Config, m: int, n: int, e: int, sms: int, gpu: str = "h200") -> int:
    """Bytes the grid's resident programs keep requested from memory: each has up to
    `num_stages - 1` tiles of A and B loading while it multiplies the oldest one."""
    resident = min(_tiles(m, n, cfg.block_m, cfg.block_n) * cfg.split_k, sms * blocks_per_sm(gpu, cfg, e))
    return resident * (cfg.num_stages - 1) * (cfg.block_m + cfg.block_n) * cfg.block_k * e


# The default config is the advisor's top-1 (tilewise.advise: every config of the kernel's space ranked by
# tilewise.model.predict, calibrated on the H200 sweep in tests/data/sweeps/h200). The hand table it replaces
# and the rows that chose it are in tests/data/tuning/gemm.md; the sweep timed that rule beside the space
# ("hand" rows): within 5% of the best config on 33% of the held-out shapes, the advisor on ~70%
# (docs/advise.md).
@functools.lru_cache(maxsize=4096)
def _choose_cached(m: int, n: int, k: int, dtype: str, key: str, layout: str) -> Config:
    best = advise("gemm", {"m": m, "n": n, "k": k, "dtype": dtype, "layout": layout}, gpu=key, top_k=1)[0]
    return Config(**best.config, reason=best.reason)


def choose_config(m: int, n: int, k: int, dtype: str, device: torch.device | None = None, layout: str = "nn") -> Config:
    """The advisor's top-1 configuration for this shape (`tilewise.advise.default_config`), cached.

    layout: "nn" when B is row-major [K, N], "nt" when B is a transposed row-major weight (`a @ w.T`;
    the persistent TMA kernel then describes w itself)."""
    key = gpu_key(device) if device is not None else "h200"
    dt = _gpus.dtype_name(dtype) if dtype != "fp32" else "fp32"
    return _choose_cached(int(m), int(n), int(k), dt, key, layout)


# The model prices a stream-K config less surely than a data-parallel one (held-out median error 5-11% per
# stream-K config against 4-10%, benchmarks/sweeps/calibrate_gluon.py on tests/data/sweeps/h200/gemm_gluon.jsonl;
# at 128 < M <= 768 it predicts the stream-K configs a median 18% too fast): the dispatch takes stream-K only where
# it predicts this much less time than the best data-parallel config. Replaying both sweeps' rows through the
# dispatch (152 problems, with the spill rule and the deep-ring tiles of advise.space): a margin of 0.85 took
# stream-K on 3 problems, each slower than the data-parallel config it displaced (384 x 6144 x 4096: 40.8 us
# against 38.0 for the Triton kernel), geometric-mean speedup over cuBLAS -0.0441 in log and 32 problems below
# 0.90x; 0.75 takes it on none of them, -0.0406 and 30. Where stream-K wins on the sweep (2000 x 3000 x 4000:
# 84.1 us against 98.3) the model does not see it yet.
STREAM_K_MARGIN = 0.75


@functools.lru_cache(maxsize=4096)
def _gluon_cached(
    m: int, n: int, k: int, dtype: str, key: str, layout: str
) -> tuple[gemm_gluon.GluonGemmConfig, float] | None:
    """(best Gluon config, its predicted ms) of `advise.space.gemm_gluon_space`, or None when none fits; a
    stream-K config only where it beats the best data-parallel one by STREAM_K_MARGIN."""
    p = {"m": m, "n": n, "k": k, "dtype": dtype, "layout": layout}
    ranked = sorted((predict.gemm_gluon(p, c, key).ms, gemm_gluon.config_from_dict(c).tag(), c)
                    for c in gemm_gluon_space(m, n, k, dtype, key, layout))  # fmt: skip
    dp = [r for r in ranked if not r[2].get("stream_k")]
    sk = [r for r in ranked if r[2].get("stream_k")]
    if dp and (not sk or sk[0][0] >= STREAM_K_MARGIN * dp[0][0]):
        ranked = dp
    if not ranked:
        return None
    ms, _tag, c = ranked[0]
    return gemm_gluon.config_from_dict(c), ms


@functools.lru_cache(maxsize=4096)
def _triton_ms(cfg: Config, m: int, n: int, k: int, dtype: str, key: str, layout: str) -> float:
    c = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.name != "reason"}
    return predict.predict("gemm", {"m": m, "n": n, "k": k, "dtype": dtype, "layout": layout}, c, key).ms


# The Gluon kernel's launch costs the host more than the Triton kernel's (a JIT launch with three host-side
# TMA descriptors, against the Triton plans' direct launch): in the fixture rows (H200, gemm_vs_cublas.json)
# eager calls of 4-60 us kernels took 45-135 us (1000^3 fp16 nt: 10.8 us in a CUDA graph, 89.7 eager), and
# eager matched the graph time from ~190 us on (2048 x 2048 x 28672: 309.9 eager, 308.1 graph). Below this
# predicted time an eager call runs the Triton config; a CUDA-graph capture still takes the Gluon kernel.
GLUON_EAGER_MIN_MS = 0.15


def model_candidates(
    m: int, n: int, k: int, dtype: str, layout: str, device: torch.device | None, key: str
) -> tuple[Config, float, gemm_gluon.GluonGemmConfig | None, float | None]:
    """The two kernels' candidates the dispatch compares for a problem, before any tensor is checked: (the Triton
    kernel's advised top-1, its predicted ms, the Gluon kernel's best or None (fp32, or no config fits), its ms).
    `device` picks the Triton config as `choose_config` does; `key` is the GPU whose model predicts."""
    tcfg = choose_config(m, n, k, dtype, device, layout)
    t_ms = _triton_ms(tcfg, m, n, k, dtype, key, layout)
    best = _gluon_cached(m, n, k, dtype, key, layout) if dtype != "fp32" else None
    return tcfg, t_ms, (best[0] if best else None), (best[1] if best else None)


def _layout(b: torch.Tensor) -> str:
    return "nn" if b.stride(1) == 1 else "nt"


def choose_kernel(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias: torch.Tensor | None = None
) -> tuple[Config, gemm_gluon.GluonGemmConfig | None, str]:
    """The advisor's top-1 across the Triton and the Gluon kernel for these (checked) tensors.

    Returns (Triton config, Gluon config or None, reason). The Gluon config is returned when the model
    predicts it faster than the Triton kernel's top-1 and `gemm_gluon.unsupported` has no objection (Hopper,
    a verified Triton version, TMA-compatible tensors); the reason says which ran and why the other did not.
    """
    m, k = a.shape
    n = b.shape[1]
    layout = "nn" if b.stride(1) == 1 else "nt"
    dt = _DTYPES[a.dtype]
    key = gpu_key(a.device)
    tcfg, t_ms, g, g_ms = model_candidates(int(m), int(n), int(k), dt, layout, a.device, key)
    if a.dtype == torch.float32:
        return tcfg, None, f"triton {tcfg.tag()}: the Gluon kernel takes fp16/bf16"
    if g is None or g_ms is None:
        return tcfg, None, f"triton {tcfg.tag()}: no Gluon config fits {m}x{n}x{k} {dt} {layout} on {key}"
    if g_ms >= t_ms:
        return tcfg, None, (f"triton {tcfg.tag()}: predicted {t_ms * 1e3:.1f} us, the Gluon kernel's best "
                            f"{g.tag()} {g_ms * 1e3:.1f} us")  # fmt: skip
    why_not = gemm_gluon.unsupported(a, b, c, bias)
    if why_not:
        return tcfg, None, (f"triton {tcfg.tag()}: the model prefers Gluon {g.tag()} ({g_ms * 1e3:.1f} us against "
                            f"{t_ms * 1e3:.1f}) but {why_not}")  # fmt: skip
    return (
        tcfg,
        g,
        f"gluon {g.tag()}: predicted {g_ms * 1e3:.1f} us against the Triton kernel's {t_ms * 1e3:.1f} ({tcfg.tag()})",
    )


# --------------------------------------------------------------------------- kernels


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _tile_coords(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    """Grouped order: GROUP_M row tiles share a column of B tiles while it is in L2."""
    per_group = GROUP_M * tiles_n
    group = tile // per_group
    first_m = group * GROUP_M
    rows = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (tile % per_group) % rows
    pid_n = (tile % per_group) // rows
    return pid_m, pid_n


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _epilogue(acc, bias_ptr, offs_n, N, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
        acc = acc + bias[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "gelu":  # tanh approximation
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = 0.5 * acc * (1.0 + (2.0 * tl.sigmoid(2.0 * inner) - 1.0))
    elif ACTIVATION == "silu":
        acc = acc * tl.sigmoid(acc)
    return acc


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _matmul_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # pointers
    a_ptr, b_ptr, c_ptr, bias_ptr, ws_ptr, counter_ptr,
    # sizes (M, N, K passed divided by MUL_M / MUL_N / MUL_K; M_LOAD / N_LOAD: the rows / columns loads
    # wrap at, passed divided by MUL_ML / MUL_NL)
    M, N, K, K_PER_SPLIT, M_LOAD, N_LOAD,
    # strides
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    # meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    SPLIT_K: tl.constexpr, EVEN_K: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
    MUL_ML: tl.constexpr, MUL_NL: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, BIG: tl.constexpr, A_EVICT: tl.constexpr, B_EVICT: tl.constexpr,
    # each stride was passed divided by its largest power of two (up to 16 bytes): the compiler
    # then knows rows start 16-byte aligned and can use wide (cp.async 16 B) loads
    MUL_AM: tl.constexpr, MUL_AK: tl.constexpr, MUL_BK: tl.constexpr, MUL_BN: tl.constexpr,
    MUL_CM: tl.constexpr, MUL_CN: tl.constexpr,
    # M, N, K as quotient x power of two (up to 16 bytes), for the masks: triton specializes an
    # integer only when it divides by 16, so with a plain N = 5000 it cannot prove `rn < N` constant
    # over 8 columns and stores 2 bytes at a time (3000 x 5000 x 128 ran at 0.24x cuBLAS writing 30 MB
    # at 0.37 TB/s; PTX for sm_90: 64 st.global.b16 per thread at N = 5000, 8 st.global.v4 at 5008);
    # the same holds for the K remainder step's mask along A's rows (K = 100: all of A in 2-byte loads)
    MUL_M: tl.constexpr = 1, MUL_N: tl.constexpr = 1, MUL_K: tl.constexpr = 1,
):  # fmt: skip
    """One BLOCK_M x BLOCK_N tile of C (program axis 0) over one K range (program axis 1)."""
    tl.static_assert(BLOCK_K >= 16)
    M = M * MUL_M
    N = N * MUL_N
    K = K * MUL_K
    stride_am = stride_am * MUL_AM
    stride_ak = stride_ak * MUL_AK
    stride_bk = stride_bk * MUL_BK
    stride_bn = stride_bn * MUL_BN
    stride_cm = stride_cm * MUL_CM
    stride_cn = stride_cn * MUL_CN
    tile = tl.program_id(0)
    pid_k = tl.program_id(1)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _tile_coords(tile, tiles_m, tiles_n, GROUP_M)

    # Rows and columns past the edge wrap onto readable ones: loads need no mask, the store has
    # one. The wrap point is passed as quotient x power of two so that the compiler keeps the
    # columns contiguous in 16-byte runs (N = 5000 is 8 x 625: 16-byte loads; with a plain
    # `% N` only N % 16 == 0 gets them). N_LOAD may exceed N by up to 15 bytes of row padding
    # the launcher checked is readable; those columns only feed outputs the store masks off.
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % (M_LOAD * MUL_ML)
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % (N_LOAD * MUL_NL)
    if BIG:
        offs_m = offs_m.to(tl.int64)
        offs_n = offs_n.to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    k_lo = pid_k * K_PER_SPLIT
    k_hi = tl.minimum(k_lo + K_PER_SPLIT, K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + (k_lo + offs_k)[None, :] * stride_ak
    b_ptrs = b_ptr + (k_lo + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # Main loop over whole BLOCK_K steps without masks (a mask that varies along K would cut
    # the loads to one element: 5000^3 ran at 36 TFLOP/s with the K mask in every step).
    k_main = k_lo + ((k_hi - k_lo) // BLOCK_K) * BLOCK_K
    for _k in range(k_lo, k_main, BLOCK_K):
        a = tl.load(a_ptrs, eviction_policy=A_EVICT)
        b = tl.load(b_ptrs, eviction_policy=B_EVICT)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if not EVEN_K:  # one masked step for the K remainder (the last split only)
        if k_main < k_hi:
            a = tl.load(a_ptrs, mask=(k_main + offs_k)[None, :] < k_hi, other=0.0)
            b = tl.load(b_ptrs, mask=(k_main + offs_k)[:, None] < k_hi, other=0.0)
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if SPLIT_K > 1:
        # Serial split-K fix-up: every split parks its fp32 partial in the workspace (it stays
        # in L2), the last split to arrive sums all partials in split order (deterministic)
        # and writes C. The counter goes back to zero for the next call.
        tile_elems = BLOCK_M * BLOCK_N
        idx = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        ws_tile = ws_ptr + tile.to(tl.int64) * (SPLIT_K * tile_elems)
        tl.store(ws_tile + pid_k * tile_elems + idx, acc, cache_modifier=".cg")
        tl.debug_barrier()
        arrived = tl.atomic_add(counter_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for s in tl.static_range(SPLIT_K):
                acc += tl.load(ws_tile + s * tile_elems + idx, cache_modifier=".cg")
            tl.atomic_xchg(counter_ptr + tile, 0)
            acc = _epilogue(acc, bias_ptr, rn, N, HAS_BIAS, ACTIVATION)
            c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
            tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))
    else:
        acc = _epilogue(acc, bias_ptr, rn, N, HAS_BIAS, ACTIVATION)
        c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _persistent_tile(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    a_desc, b_desc, c_desc, bias_ptr, tile, tiles_m, tiles_n, k_steps, N,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, EPILOGUE_SPLIT: tl.constexpr, OUT_DTYPE: tl.constexpr,
    B_T: tl.constexpr,
):  # fmt: skip
    """One output tile through TMA: K loop, epilogue, store (in two halves to halve the staging buffer).
    B_T: b_desc describes B's transpose (a row-major weight w [N, K] for `a @ w.T`): its tiles are
    K-major, which wgmma reads from shared memory as they are (a transposed view, no data movement)."""
    pid_m, pid_n = _tile_coords(tile, tiles_m, tiles_n, GROUP_M)
    om = pid_m * BLOCK_M
    on = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for ks in range(k_steps):
        a = a_desc.load([om, ks * BLOCK_K])
        if B_T:
            b = b_desc.load([on, ks * BLOCK_K]).T
        else:
            b = b_desc.load([ks * BLOCK_K, on])
        acc = tl.dot(a, b, acc)
    rn = on + tl.arange(0, BLOCK_N)
    acc = _epilogue(acc, bias_ptr, rn, N, HAS_BIAS, ACTIVATION)
    if EPILOGUE_SPLIT:
        acc3 = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
        c0, c1 = tl.split(acc3)
        c_desc.store([om, on], c0.to(OUT_DTYPE))
        c_desc.store([om, on + BLOCK_N // 2], c1.to(OUT_DTYPE))
    else:
        c_desc.store([om, on], acc.to(OUT_DTYPE))


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _matmul_tma_persistent_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    # descriptors (TMA: the copy engine moves tiles, zero-padding past the edges)
    a_desc, b_desc, c_desc, bias_ptr,
    # sizes
    M, N, K,
    # meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    NUM_PROGRAMS: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
    EPILOGUE_SPLIT: tl.constexpr, OUT_DTYPE: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
    B_T: tl.constexpr = False,
):  # fmt: skip
    """Persistent: program p takes tiles p, p + NUM_PROGRAMS, ... in grouped order (NUM_PROGRAMS is the
    SM count; the grid is min(SMs, tiles) programs)."""
    start = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    num_tiles = tiles_m * tiles_n
    if WARP_SPECIALIZE:  # only compiled when asked for: older triton has no warp_specialize
        for tile in tl.range(start, num_tiles, NUM_PROGRAMS, warp_specialize=True):
            _persistent_tile(
                a_desc, b_desc, c_desc, bias_ptr, tile, tiles_m, tiles_n, k_steps, N,
                BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, HAS_BIAS, ACTIVATION, EPILOGUE_SPLIT, OUT_DTYPE, B_T,
            )  # fmt: skip
    else:
        for tile in range(start, num_tiles, NUM_PROGRAMS):
            _persistent_tile(
                a_desc, b_desc, c_desc, bias_ptr, tile, tiles_m, tiles_n, k_steps, N,
                BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, HAS_BIAS, ACTIVATION, EPILOGUE_SPLIT, OUT_DTYPE, B_T,
            )  # fmt: skip


# --------------------------------------------------------------------------- launcher


def _check(
    a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None, bias: torch.Tensor | None, activation: str
) -> None:
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise InputError(f"matmul: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise InputError(f"matmul: {name} must be 2-D, got {t.dim()}-D with shape {list(t.shape)}")
        if t.dtype not in _DTYPES:
            raise InputError(f"matmul: {name} must be bfloat16, float16 or float32, got {t.dtype}")
        if t.numel() == 0:
            raise InputError(f"matmul: {name} must not be empty, got shape {list(t.shape)}")
    if a.shape[1] != b.shape[0]:
        raise InputError(
            f"matmul: inner dimensions must match: a is {list(a.shape)} (K = {a.shape[1]}), "
            f"b is {list(b.shape)} (K = {b.shape[0]})"
        )
    if a.dtype != b.dtype:
        raise InputError(f"matmul: a and b must have the same dtype, got a {a.dtype} and b {b.dtype}")
    if a.device != b.device:
        raise InputError(f"matmul: a and b must be on the same device, got a on {a.device} and b on {b.device}")
    if a.device.type != "cuda" and not interpreting():
        raise InputError(f"matmul: tensors must be on a CUDA device (or set TRITON_INTERPRET=1), got {a.device}")
    m, n = a.shape[0], b.shape[1]
    if out is not None:
        if not isinstance(out, torch.Tensor) or out.shape != (m, n) or out.dtype != a.dtype or out.device != a.device:
            got = f"{list(out.shape)} {out.dtype} on {out.device}" if isinstance(out, torch.Tensor) else type(out)
            raise InputError(f"matmul: out must be a [{m}, {n}] {a.dtype} tensor on {a.device}, got {got}")
    if bias is not None:
        if not isinstance(bias, torch.Tensor) or bias.shape != (n,) or bias.device != a.device:
            got = f"{list(bias.shape)} on {bias.device}" if isinstance(bias, torch.Tensor) else type(bias)
            raise InputError(f"matmul: bias must be a [{n}] tensor on {a.device}, got {got}")
    if activation not in ACTIVATIONS:
        raise InputError(f"matmul: activation must be one of {ACTIVATIONS}, got {activation!r}")


def _tma_rows(t: torch.Tensor) -> bool:
    """A TMA descriptor's tensor: unit last stride, 16-byte aligned base and row stride."""
    return bool(t.stride(1) == 1 and (t.stride(0) * t.element_size()) % 16 == 0 and t.data_ptr() % 16 == 0)


def _b_transposed(b: torch.Tensor) -> bool:
    """B is the transpose of a row-major matrix (`a @ w.T`): the TMA kernel describes w [N, K] instead."""
    return bool(b.stride(1) != 1 and b.stride(0) == 1)


def _tma_ok(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> bool:
    """TMA needs 16-bit data (tf32 wgmma wants K-major B), unit last strides and 16-byte aligned bases
    and row strides (B's, or its transpose's for `a @ w.T`), and a Hopper GPU with host descriptors."""
    if a.device.type != "cuda" or a.dtype not in (torch.bfloat16, torch.float16) or TensorDescriptor is None:
        return False
    if capability(a.device)[0] < 9:
        return False
    return _tma_rows(a) and _tma_rows(b.t() if _b_transposed(b) else b) and _tma_rows(c)


def _span(t: torch.Tensor) -> int:
    """Largest element offset a kernel computes into `t` (int32 arithmetic must not overflow)."""
    return int(sum((d - 1) * abs(st) for d, st in zip(t.shape, t.stride())) + 1)


def _load_extent(t: torch.Tensor, dim: int, size: int, unit: int) -> int:
    """Where loads along `dim` (M of A: dim 0, N of B: dim 1) may wrap: `size`, or `size` rounded up
    to `unit` elements when `dim` is the unit-stride one, the other stride leaves room for the
    rounded rows and the storage holds the last one (padding, never another tensor's bytes)."""
    padded = cdiv(size, unit) * unit
    if padded == size or t.stride(dim) != 1:
        return size
    other = t.stride(1 - dim)
    last = t.storage_offset() + (t.shape[1 - dim] - 1) * other + padded
    if other % unit or other < padded or last * t.element_size() > t.untyped_storage().nbytes():
        return size
    return padded


def _load_extents(a: torch.Tensor, b: torch.Tensor) -> tuple[int, int] | None:
    """The extents `_make_plan` derives from A's and B's storage sizes (`_load_extent`), which their shapes and
    strides do not fix: part of a plan's key where they can differ from the sizes (a row count or N that is not
    a multiple of 16 bytes along a unit-stride dimension), else None. Such plans were rebuilt on every call before:
    100 x 100 x 100 bf16 took 58.7 us eager against 4.4 in a CUDA graph, 1023 x 1025 x 1027 128.5 against 22.3."""
    if a.dim() != 2 or b.dim() != 2:
        return None  # the checks refuse it
    cap = max(1, 16 // a.element_size())
    m, n = a.shape[0], b.shape[1]
    extents = _load_extent(a, 0, m, cap), _load_extent(b, 1, n, cap)
    return None if extents == (m, n) else extents


def _split_stride(stride: int, cap: int) -> tuple[int, int]:
    """stride = quotient x multiplier, the multiplier its largest power of two up to `cap`."""
    if stride in (0, 1):
        return stride, 1
    mult = min(stride & -stride, cap)
    return stride // mult, mult


def _row_aligned(t: torch.Tensor) -> bool:
    """One unit stride and the other a multiple of 16 bytes: rows can be read with 16-byte loads."""
    e = t.element_size()
    s0, s1 = t.stride()
    return bool(
        t.data_ptr() % 16 == 0
        and ((s1 == 1 and (s0 * e) % 16 == 0) or (s0 == 1 and (s1 * e) % 16 == 0) or t.shape[0] == 1 or t.shape[1] == 1)
    )


def _padded(t: torch.Tensor) -> torch.Tensor:
    """A row-major copy of `t` whose rows start on 16-byte boundaries (a view of the same shape)."""
    rows, cols = t.shape
    unit = max(1, 16 // t.element_size())
    buf = torch.empty((rows, cdiv(cols, unit) * unit), dtype=t.dtype, device=t.device)
    view = buf[:, :cols]
    view.copy_(t)
    return view


# Operands whose rows cannot be read with 16-byte loads are copied to padded rows above an intensity and a
# size (`predict.pads_operand`): the rule and its numbers live with the time model, which predicts the copy.


_WS_FAILED: set[str] = set()


class _Plan:
    """Everything a call with this signature launches: the tiles, the grid, the scalar arguments."""

    __slots__ = ("activation", "b_t", "blocks", "cfg", "gluon", "gluon_eager", "ints", "launcher", "pad_a", "pad_b", "tiles", "why",
                 "ws_numel")  # fmt: skip
    activation: str
    b_t: bool  # B is w.T: the TMA kernel describes w [N, K]
    blocks: tuple[list[int], list[int], list[int]]  # TMA boxes of A, B (or w) and C
    cfg: Config
    gluon: gemm_gluon.GluonGemmConfig | None  # the Gluon kernel's config, where the dispatch takes it
    gluon_eager: bool  # eager calls run the Gluon kernel (else only CUDA-graph captures do)
    ints: tuple[int, ...]  # the kernel's integer arguments
    launcher: Launcher
    pad_a: bool
    pad_b: bool
    tiles: int
    why: str
    ws_numel: int  # split-K workspace elements (0: none)


def _make_plan(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias: torch.Tensor | None, activation: str, cfg: Config
) -> _Plan:
    """The launch of `cfg` on these tensors (a and b already padded where the plan pads them)."""
    m, k = a.shape
    n = b.shape[1]
    has_bias = bias is not None
    plan = _Plan()
    plan.gluon = None
    plan.gluon_eager = True
    plan.why = cfg.reason
    plan.activation = activation
    plan.pad_a = plan.pad_b = False
    plan.ws_numel = 0
    plan.b_t = False
    if cfg.persistent:
        plan.b_t = _b_transposed(b)
        if cfg.warp_specialize and (cfg.tag() in _WS_FAILED or os.environ.get("TILEWISE_NO_WARP_SPECIALIZE")):
            cfg = dataclasses.replace(cfg, warp_specialize=False)
        split_epi = cfg.block_n >= 128
        # one program per SM, fewer when there are fewer tiles; the loop's stride stays the SM count (a
        # compile-time constant), so a grid of fewer tiles than SMs runs one tile per program on the same binary
        sms = sm_count(a.device)
        programs = min(sms, _tiles(m, n, cfg.block_m, cfg.block_n))
        plan.blocks = (
            [cfg.block_m, cfg.block_k],
            [cfg.block_n, cfg.block_k] if plan.b_t else [cfg.block_k, cfg.block_n],
            [cfg.block_m, cfg.block_n // 2 if split_epi else cfg.block_n],
        )
        plan.launcher = Launcher(
            _matmul_tma_persistent_kernel, (programs,),
            dict(
                BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, GROUP_M=cfg.group_m,
                NUM_PROGRAMS=sms, HAS_BIAS=has_bias, ACTIVATION=activation,
                EPILOGUE_SPLIT=split_epi, OUT_DTYPE=_TL_DTYPES[c.dtype], WARP_SPECIALIZE=cfg.warp_specialize,
                B_T=plan.b_t,
            ),
            num_warps=cfg.num_warps, num_stages=cfg.num_stages,
        )  # fmt: skip
        plan.ints = (m, n, k)
        plan.tiles = 0
        plan.cfg = cfg
        return plan
    split = cfg.split_k
    k_per_split = cdiv(cdiv(k, split), cfg.block_k) * cfg.block_k
    split = cdiv(k, k_per_split)  # no empty splits
    tiles = _tiles(m, n, cfg.block_m, cfg.block_n)
    if split > 1:
        plan.ws_numel = tiles * split * cfg.block_m * cfg.block_n
    big = max(_span(a), _span(b), _span(c)) >= 2**31 - 1
    cap = max(1, 16 // a.element_size())
    ext_m, ext_n = _load_extent(a, 0, m, cap), _load_extent(b, 1, n, cap)
    # the extents read the storage's size, which shapes and strides do not fix: the plan's key holds them (_load_extents)
    mq, mml = _split_stride(ext_m, cap)
    nq, mnl = _split_stride(ext_n, cap)
    (m_q, mul_m), (n_q, mul_n), (k_q, mul_k) = _split_stride(m, cap), _split_stride(n, cap), _split_stride(k, cap)
    (sam, mam), (sak, mak) = _split_stride(a.stride(0), cap), _split_stride(a.stride(1), cap)
    (sbk, mbk), (sbn, mbn) = _split_stride(b.stride(0), cap), _split_stride(b.stride(1), cap)
    (scm, mcm), (scn, mcn) = _split_stride(c.stride(0), cap), _split_stride(c.stride(1), cap)
    plan.launcher = Launcher(
        _matmul_kernel, (tiles, split),
        dict(
            BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, GROUP_M=cfg.group_m,
            SPLIT_K=split, EVEN_K=(k % cfg.block_k == 0), HAS_BIAS=has_bias, ACTIVATION=activation,
            MUL_ML=mml, MUL_NL=mnl,
            INPUT_PRECISION="tf32" if a.dtype == torch.float32 else "ieee", BIG=big,
            A_EVICT="evict_last" if cfg.stream_b else "", B_EVICT="evict_first" if cfg.stream_b else "",
            MUL_AM=mam, MUL_AK=mak, MUL_BK=mbk, MUL_BN=mbn, MUL_CM=mcm, MUL_CN=mcn, MUL_M=mul_m, MUL_N=mul_n,
            MUL_K=mul_k,
        ),
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    plan.ints = (m_q, n_q, k_q, k_per_split, mq, nq, sam, sak, sbk, sbn, scm, scn)
    plan.tiles = tiles
    plan.cfg = cfg
    return plan


def _use_gluon(plan: _Plan) -> bool:
    """A Gluon plan launches the Gluon kernel eagerly only where it predicted long enough to hide its launch
    cost (`GLUON_EAGER_MIN_MS`), and always under CUDA-graph capture (a replay pays no host cost)."""
    use: bool = plan.gluon is not None and (
        plan.gluon_eager or (_has_cuda() and torch.cuda.is_current_stream_capturing())
    )
    return use


@functools.lru_cache(maxsize=1)
def _has_cuda() -> bool:
    return bool(torch.cuda.is_available())  # (a CPU-only torch raises on the capture query)


def _run(plan: _Plan, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias: torch.Tensor | None) -> None:
    """Launch a plan: allocations and descriptors are per call, everything else was derived once."""
    if _use_gluon(plan):
        assert plan.gluon is not None  # _use_gluon checked it
        gemm_gluon.gluon_matmul(a, b, plan.gluon, out=c, bias=bias, activation=plan.activation)
        return
    bias_arg = bias if bias is not None else c
    if plan.cfg.persistent:
        ba, bb, bc = plan.blocks
        descs = (
            TensorDescriptor.from_tensor(a, ba),
            TensorDescriptor.from_tensor(b.t() if plan.b_t else b, bb),
            TensorDescriptor.from_tensor(c, bc),
        )
        plan.launcher(*descs, bias_arg, *plan.ints)
        return
    if plan.ws_numel:
        ws = torch.empty(plan.ws_numel, dtype=torch.float32, device=a.device)
        cnt = counters(a.device, plan.tiles)
    else:
        ws = cnt = c
    plan.launcher(a, b, c, bias_arg, ws, cnt, *plan.ints)


def _run_first(
    plan: _Plan, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias: torch.Tensor | None, activation: str
) -> _Plan:
    """The first launch of a plan compiles; warp specialization needs triton >= 3.5 on Hopper and compiles
    only some shapes (128x256x64 w4 st3 hit an internal compiler error on triton 3.6): fall back once.
    A Gluon plan that raises turns the Gluon kernel off (one warning) and runs the Triton config instead."""
    if plan.gluon is not None:
        try:
            if _use_gluon(plan):
                _run(plan, a, b, c, bias)
                return plan
            # eager calls of this signature run the Triton config; the Gluon kernel is built (and run once)
            # now, so that a CUDA-graph capture later finds it compiled; the Triton launch below writes c last
            gemm_gluon.gluon_matmul(a, b, plan.gluon, out=c, bias=bias, activation=activation)
        except Exception as exc:
            why = gemm_gluon.gluon_failed(exc)
            plan = _make_plan(a, b, c, bias, activation, plan.cfg)
            plan.why = f"triton {plan.cfg.tag()}: {why}"
    try:
        _run(plan, a, b, c, bias)
    except Exception:
        if not (plan.cfg.persistent and plan.cfg.warp_specialize):
            raise
        _WS_FAILED.add(plan.cfg.tag())
        plan = _make_plan(a, b, c, bias, activation, dataclasses.replace(plan.cfg, warp_specialize=False))
        _run(plan, a, b, c, bias)
    return plan


def _launch(
    a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, bias: torch.Tensor | None, activation: str, cfg: Config
) -> None:
    """Launch `cfg` as given (no plan cache; tests and sweeps)."""
    _run_first(_make_plan(a, b, c, bias, activation, cfg), a, b, c, bias, activation)


# Launch plans by call signature (shapes, strides, dtypes, devices, 16-byte alignment of every tensor,
# bias, activation, config): a repeated call does the checks' work once (a dict lookup).
_PLANS = PlanCache()


def _plan_key(
    a: torch.Tensor,
    b: torch.Tensor,
    out: torch.Tensor | None,
    bias: torch.Tensor | None,
    activation: str,
    config: Config | gemm_gluon.GluonGemmConfig | None,
) -> tuple[Any, ...] | None:
    try:
        return (
            a.shape, a.stride(), a.dtype, a.device, a.data_ptr() % 16 == 0,
            b.shape, b.stride(), b.dtype, b.device, b.data_ptr() % 16 == 0,
            None if out is None else (out.shape, out.stride(), out.dtype, out.device, out.data_ptr() % 16 == 0),
            None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.device, bias.data_ptr() % 16 == 0),
            activation, config, _load_extents(a, b),
        )  # fmt: skip
    except (AttributeError, TypeError):  # not tensors: the checks say what was expected
        return None  # (a None key is never stored, so it finds no plan)


def _new_plan(
    key: tuple[Any, ...] | None,
    a: torch.Tensor,
    b: torch.Tensor,
    out: torch.Tensor | None,
    bias: torch.Tensor | None,
    activation: str,
    config: Config | gemm_gluon.GluonGemmConfig | None,
) -> torch.Tensor:
    """Check the inputs and derive the plan of a signature not seen before (then cached)."""
    _check(a, b, out, bias, activation)
    m, k = a.shape
    n = b.shape[1]
    c = out if out is not None else torch.empty((m, n), dtype=a.dtype, device=a.device)
    gcfg: gemm_gluon.GluonGemmConfig | None = None
    why = ""
    if config is None:
        cfg, gcfg, why = choose_kernel(a, b, c, bias)
    elif isinstance(config, gemm_gluon.GluonGemmConfig):  # a pinned Gluon config (tests, sweeps)
        cfg = choose_config(m, n, k, _DTYPES[a.dtype], a.device, "nn" if b.stride(1) == 1 else "nt")
        why_not = gemm_gluon.unsupported(a, b, c, bias)
        gcfg = None if why_not else config
        why = f"triton {cfg.tag()}: {why_not}" if why_not else f"gluon {config.tag()}: pinned"
    else:
        cfg = config
    flops = traffic.gemm_flops(m, n, k)
    pad_a = not _row_aligned(a) and predict.pads_operand(flops, a.numel() * a.element_size())
    pad_b = not _row_aligned(b) and predict.pads_operand(flops, b.numel() * b.element_size())
    a = _padded(a) if pad_a else a
    b = _padded(b) if pad_b else b
    if cfg.persistent and not _tma_ok(a, b, c):
        # The pointer kernel with the same tiles; 4 stages where they fit (128x256x64 at st4:
        # 770 TFLOP/s against 623 at st3 on 8192^3, round 1).
        st = 4 if _smem_bytes(cfg.block_m, cfg.block_n, cfg.block_k, 4, a.element_size()) <= 200 * 1024 else 3
        cfg = dataclasses.replace(cfg, persistent=False, warp_specialize=False, num_stages=max(cfg.num_stages, st))
    plan = _make_plan(a, b, c, bias, activation, cfg)
    plan.pad_a, plan.pad_b = pad_a, pad_b
    if gcfg is not None and not (pad_a or pad_b):
        plan.gluon = gcfg
        if config is None:  # the dispatch's choice; a pinned config runs as asked
            best = _gluon_cached(int(m), int(n), int(k), _DTYPES[a.dtype], gpu_key(a.device), _layout(b))
            plan.gluon_eager = best is not None and best[1] >= GLUON_EAGER_MIN_MS
            if not plan.gluon_eager:
                why += f"; eager calls run the Triton config (predicted < {GLUON_EAGER_MIN_MS * 1e3:.0f} us)"
    if why:
        plan.why = why if gcfg is None or plan.gluon is not None else f"triton {cfg.tag()}: operands padded"
    plan = _run_first(plan, a, b, c, bias, activation)
    if key is not None:
        _PLANS.put(key, plan)
    return c


def matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    activation: str = "none",
    config: Config | gemm_gluon.GluonGemmConfig | None = None,
) -> torch.Tensor:
    """C = activation(A @ B + bias).

    Args:
        a: [M, K] bfloat16, float16 or float32 (float32 multiplies as TF32), any strides.
        b: [K, N], same dtype and device as `a`, any strides.
        out: optional [M, N] tensor of the same dtype to write into (any strides).
        bias: optional [N] vector added before the activation.
        activation: 'none', 'relu', 'gelu' (tanh) or 'silu', applied in fp32.
        config: pin a `Config` or a `gemm_gluon.GluonGemmConfig` (tests, sweeps); by default `choose_kernel`
            picks one.

    Returns:
        C [M, N] in the dtype of `a`, accumulated in fp32.
    """
    key = _plan_key(a, b, out, bias, activation, config)
    try:
        plan = _PLANS.get(key)
    except TypeError:  # an unhashable argument (activation=[...]): the checks refuse it
        plan = key = None
    if plan is None:
        return _new_plan(key, a, b, out, bias, activation, config)
    c = out if out is not None else torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    _run(plan, _padded(a) if plan.pad_a else a, _padded(b) if plan.pad_b else b, c, bias)
    return c


def matmul_plan(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    activation: str = "none",
    config: Config | gemm_gluon.GluonGemmConfig | None = None,
) -> dict[str, str]:
    """Which kernel and config `matmul` runs for these arguments, and why (the cached plan; built, and the
    kernel launched once, on first use): {"kernel": "gluon" | "triton", "config": tag, "eager_kernel": the
    kernel an eager (not graph-captured) call runs, "reason": ...}."""
    key = _plan_key(a, b, out, bias, activation, config)
    plan = _PLANS.get(key) if key is not None else None
    if plan is None:
        matmul(a, b, out=out, bias=bias, activation=activation, config=config)
        plan = _PLANS.get(key) if key is not None else None
    if plan is None:  # arguments without a key (not tensors, unhashable): derive the decision again
        c = out if out is not None else torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
        cfg, g, why = choose_kernel(a, b, c, bias)
        return {
            "kernel": "gluon" if g else "triton",
            "config": (g or cfg).tag(),
            "eager_kernel": "triton",
            "reason": why,
        }
    g = plan.gluon
    return {
        "kernel": "gluon" if g else "triton",
        "config": (g or plan.cfg).tag(),
        "eager_kernel": "gluon" if g and plan.gluon_eager else "triton",
        "reason": plan.why,
    }


__all__ = [
    "ACTIVATIONS",
    "Config",
    "choose_config",
    "choose_kernel",
    "choose_split_k",
    "matmul",
    "matmul_plan",
    "model_candidates",
]

check_matmul = _check  # public: tilewise.kernels.custom_ops runs it in the fake impls
