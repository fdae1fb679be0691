"""The knob space of each kernel: every configuration the advisor may propose, and the sweep times.

Pure Python (no torch, no triton). One function per family returns the configurations that fit
the GPU for one problem, as plain dicts whose keys are the kernel's own config fields
(`tilewise.kernels.gemm.Config`, `flash_attention.ForwardConfig`, decode's `tile` + `num_splits`,
`grouped_gemm.GroupedConfig`). The sweep (benchmarks/sweeps/sweep.py) times exactly these lists,
and the advisor ranks exactly these lists, so a proposed config is always one that was timed.

Fit rules (each one a hardware limit, with the number; the shared-memory bytes, accumulator registers
and tag of a config are computed by `tilewise.model.tiles`, which the time model uses too):
* shared memory: triton 3.6 gives the pointer GEMM `stages` A+B tile buffers when BLOCK_M >= 64
  (the wgmma path) and `stages - 1` below (mma.sync with a cp.async ring): that is exactly what it
  reserved compiling every config of the grid for sm_90 (benchmarks/sweeps/compile_sm90.py,
  sm90_gemm_compiled.json beside this file); the persistent TMA kernel keeps `stages` tiles plus
  the epilogue's staging half tile; all under the per-block opt-in limit (232448 B on the H200)
  less the driver's 1 KB;
* registers: the fp32 accumulator is block_m x block_n / threads registers per thread; more than
  160 of the 255 leaves too few for addresses and operands (128x256 with 4 warps is 256: spills);
* persistent (TMA) configs need 16-bit operands, a TMA-capable GPU, 16-byte aligned rows (N and K
  multiples of 8: otherwise the launcher runs the pointer kernel) and tiles for at least 3/4 of the
  SMs (the last-wave fill `kernels.gemm.choose_split_k` asks for): the kernel launches min(SMs, tiles)
  programs (its loop stride stays the SM count, one binary) and cannot split K as the pointer kernel
  does (64 x 64 x 28672: the persistent tiles took 117-270 us, split-K 16 took 12; 1000^3 at 64 x 128
  = 128 tiles: 9.9 us against 11.8 for the pointer kernel; benchmarks/sweeps/gemm_ab_h200.jsonl).
  Both layouts: for `a @ w.T` the kernel describes w [N, K] itself (8192^3 fp16 nt: 1615 us against
  1833 for the best pointer tile, cuBLAS 1626);
* split-K only where each split keeps >= 4 BLOCK_K steps (the kernel's fix-up is serial);
* spills: a pointer config whose sm_90 build for the problem's C rows spills registers is left out. C rows
  that are not 16-byte aligned (N odd or N = 2, 4 mod 8 at 16 bits) are stored one element per address, and
  the big tiles then spill (sm90_gemm_compiled.json, "spill" by C-row bytes): 1023 x 1025 x 1027 bf16 ran
  43.4 us on 128 x 128 x 64 with 4 warps (488 B spilled at 2-byte rows) against 21.7 on 8 warps (none), cuBLAS
  31.0; 333 x 7777 x 2049 136 us on 256 x 128 (216 B) against 90-82 on tiles that do not spill
  (tests/data/sweeps/h200/gemm.jsonl). The split-K configs whose unrolled fix-up spills at any alignment
  (128 x 128 split 8: ~1 KB) go too: 127 x 1000 x 4096 ran 13.1 us on 64 x 64 split 8 (96 B) against 10.8 on
  split 4 (none). A spill of SPILL_MAX_BYTES or less stays: 256^3 ran 1.04x cuBLAS on 16 x 64 x 256 at 3 stages
  (8 B), 0.93x on the 4-stage build that does not spill. A config the table lacks is kept.
"""

from __future__ import annotations

import functools
import json
import os
import re
from typing import Any

from tilewise import gpus as _gpus
from tilewise.model.tensorcore import attention_tile_budget
from tilewise.model.tiles import (
    GROUPED_SCHEDULES,
    GROUPED_STAGES,
    GROUPED_TILES,
    MAX_ACC_REGS,
    TAGS,
    attention_smem_bytes,
    attention_tag,
    decode_smem_bytes,
    decode_tag,
    gemm_acc_regs,
    gemm_gluon_smem_bytes,
    gemm_gluon_tag,
    gemm_smem_bytes,
    gemm_tag,
    grouped_space,
    grouped_tag,
    row_load_bytes,
)
from tilewise.util import cdiv

# ---------------------------------------------------------------------------------------------- GEMM

# (block_m, block_n, block_k, num_warps): the pointer kernel's tiles. Skinny tiles (16, 32 rows) take
# long K steps so one stage still moves >= 16 KB; the wide ones are the compute tiles.
GEMM_TILES = (
    (16, 64, 256, 4),
    (16, 64, 512, 4),
    (16, 128, 128, 4),
    (16, 128, 256, 4),
    (32, 64, 256, 4),
    (32, 128, 128, 4),
    (64, 64, 64, 4),
    (64, 64, 128, 4),
    (64, 128, 64, 4),
    (64, 128, 128, 4),
    (64, 256, 64, 4),
    (64, 256, 64, 8),
    (128, 64, 64, 4),
    (128, 128, 64, 4),
    (128, 128, 64, 8),
    (128, 128, 128, 8),
    (128, 256, 64, 8),
    (256, 128, 64, 8),
)
GEMM_STAGES = (3, 4)
# split-K variants: (block_m, block_n, block_k, warps, stages) x splits
GEMM_SPLIT_TILES = ((16, 128, 256, 4, 4), (64, 64, 64, 4, 4), (64, 128, 64, 4, 4), (128, 128, 64, 8, 4))
GEMM_SPLITS = (2, 4, 8, 16)
# row-major tile order (group_m 1) against the default grouped order (8)
GEMM_GROUP1_TILES = ((128, 128, 64, 8, 4), (128, 256, 64, 8, 3))
# stream B (evict B first, keep A in L2): the skinny tiles, where B is the stream
GEMM_STREAM_B_TILES = ((16, 64, 512, 4, 3), (16, 128, 256, 4, 4), (64, 256, 64, 4, 4))
# deep rings of small tiles (block_m, block_n, block_k, warps, stages), for 64-128 rows over a long K: more
# programs, each with 6-7 loads in flight. nvidia-matmul-heuristics proposed them (benchmarks/sweeps/nmh_gemm.json)
# and they beat every config of the grid there: 128 x 4096 x 14336 bf16 a @ w.T 36.5 us on 64 x 64 x 128 at 7
# stages against 43.3 (cuBLAS 37.1), 64 x 4096 x 4096 11.8 on 64 x 32 x 128 at 8 against 14.2 (cuBLAS 11.6)
# (tests/data/sweeps/h200/gemm.jsonl, "nmh" rows)
GEMM_DEEP_TILES = ((64, 32, 128, 4, 8), (64, 64, 128, 4, 7))
# ... only over K loops of at least twice their stages: on short ones the fill of a deep ring is not hidden and the
# model, fitted on long ones, does not see it (256^3 ran 3.2 us on 64 x 32 x 128 at 8 stages against 2.6 on
# 16 x 64 x 256 at 3, 512^3 4.2 against 3.9; gemm.jsonl)
DEEP_RING_STAGES = 7
# persistent TMA kernel: (block_m, block_n, block_k, warps, stages, warp_specialize)
GEMM_PERSISTENT = (
    (64, 128, 64, 4, 4, False),
    (128, 64, 64, 4, 4, False),
    (128, 128, 64, 8, 3, False),
    (128, 128, 64, 8, 4, False),
    (128, 128, 64, 8, 3, True),
    (128, 128, 64, 8, 4, True),
    (128, 256, 64, 8, 3, False),
    (128, 256, 64, 8, 4, False),
    (128, 256, 64, 8, 3, True),
    (128, 256, 64, 8, 4, True),
)


def _gemm_cfg(
    bm: int,
    bn: int,
    bk: int,
    w: int,
    st: int,
    *,
    group_m: int = 8,
    split_k: int = 1,
    persistent: bool = False,
    ws: bool = False,
    stream_b: bool = False,
) -> dict[str, Any]:
    return {
        "block_m": bm,
        "block_n": bn,
        "block_k": bk,
        "group_m": group_m,
        "split_k": split_k,
        "num_warps": w,
        "num_stages": st,
        "persistent": persistent,
        "warp_specialize": ws,
        "stream_b": stream_b,
    }


# spilled bytes per thread a config may have (two registers' worth; the module docstring has the rows)
SPILL_MAX_BYTES = 8


@functools.lru_cache(maxsize=1)
def _compiled_sm90() -> dict[str, Any]:
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sm90_gemm_compiled.json")) as f:
        configs: dict[str, Any] = json.load(f)["configs"]
    return configs


def gemm_spill_bytes(c: dict[str, Any], n: int, k: int, dtype: str) -> int | None:
    """Bytes per thread the sm_90 build of pointer config `c` spills for C rows of n elements and this K (the
    K-remainder step is its own build), from sm90_gemm_compiled.json; None when the table lacks the build."""
    e = _gpus.element_bytes(dtype)
    row = _compiled_sm90().get(f"{'fp32' if e == 4 else 'bf16'}:{gemm_tag(c)}", {})
    builds = row.get("spill", {}).get(str(row_load_bytes(n * e)))
    if builds is None:
        return None
    return int(builds["even_k" if k % c["block_k"] == 0 else "k_tail"])


def gemm_fits(c: dict[str, Any], m: int, n: int, k: int, dtype: str, gpu: str | _gpus.GPU, layout: str = "nn") -> str:
    """'' when `c` fits the GPU and the problem, else the reason it does not."""
    g = _gpus.get(gpu)
    e = _gpus.element_bytes(dtype)
    limit = g.smem_per_block_optin - g.reserved_smem_per_block
    smem = gemm_smem_bytes(c, e)
    if smem > limit:
        return f"shared memory {smem} B > {limit} B"
    if gemm_acc_regs(c) > MAX_ACC_REGS:
        return f"accumulator {gemm_acc_regs(c):.0f} registers/thread > {MAX_ACC_REGS}"
    if c["persistent"]:
        if not g.tma or e != 2:
            return "persistent TMA kernel needs 16-bit operands on a TMA GPU"
        if (n * e) % 16 or (k * e) % 16:
            return "persistent TMA kernel needs 16-byte aligned rows of A, B (or w) and C"
        if 4 * cdiv(m, c["block_m"]) * cdiv(n, c["block_n"]) < 3 * g.sms:
            return "persistent kernel needs tiles for at least 3/4 of the SMs (it cannot split K)"
    if c["split_k"] > 1 and cdiv(k, c["block_k"]) < 4 * c["split_k"]:
        return f"split-K {c['split_k']} leaves < 4 BLOCK_K steps per split"
    if e == 4 and c["block_k"] > 128:
        return "fp32 tiles take BLOCK_K <= 128"
    if c["num_stages"] >= DEEP_RING_STAGES and cdiv(k, c["block_k"]) < 2 * c["num_stages"]:
        return f"a {c['num_stages']}-stage ring needs >= {2 * c['num_stages']} BLOCK_K steps (the fill is not hidden)"
    if not c["persistent"]:
        spill = gemm_spill_bytes(c, n, k, dtype)
        if spill and spill > SPILL_MAX_BYTES:
            return f"spills {spill} B of registers per thread (sm_90 build, {row_load_bytes(n * e)}-byte C rows)"
    return ""


def gemm_grid() -> list[dict[str, Any]]:
    """Every GEMM configuration of the knob grid, before the fit rules."""
    out = []
    for bm, bn, bk, w in GEMM_TILES:
        for st in GEMM_STAGES:
            out.append(_gemm_cfg(bm, bn, bk, w, st))
    for bm, bn, bk, w, st in GEMM_SPLIT_TILES:
        for s in GEMM_SPLITS:
            out.append(_gemm_cfg(bm, bn, bk, w, st, split_k=s))
    for bm, bn, bk, w, st in GEMM_GROUP1_TILES:
        out.append(_gemm_cfg(bm, bn, bk, w, st, group_m=1))
    for bm, bn, bk, w, st in GEMM_STREAM_B_TILES:
        out.append(_gemm_cfg(bm, bn, bk, w, st, stream_b=True))
    for bm, bn, bk, w, st in GEMM_DEEP_TILES:
        out.append(_gemm_cfg(bm, bn, bk, w, st))
    for bm, bn, bk, w, st, ws in GEMM_PERSISTENT:
        out.append(_gemm_cfg(bm, bn, bk, w, st, persistent=True, ws=ws))
    return out


_GRID = gemm_grid()


def gemm_space(
    m: int, n: int, k: int, dtype: str = "bf16", gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU, layout: str = "nn"
) -> list[dict[str, Any]]:
    """The GEMM configurations that fit `gpu` for an M x N x K problem (each a fresh dict).

    layout "nn": B is [K, N] row-major; "nt": B = w.T for a row-major weight w [N, K] (`a @ w.T`)."""
    return [dict(c) for c in _GRID if not gemm_fits(c, m, n, k, dtype, gpu, layout)]


# ---------------------------------------------------------------------------------------------- Gluon GEMM

# The Gluon kernel (kernels/gemm_gluon.py, Hopper only): (schedule, block_m, block_n, block_k, stages, group_m).
# Each was compiled for sm_90a without spills and checked element-wise on the H200; the list is the one
# benchmarks/gemm_gluon_probe.py timed (benchmarks/results/h200/gemm_gluon_probe.json): cooperative
# 128 x 256 st3 is the large-shape tile (8192^3 nn 1540 us, 714 TFLOP/s, 1.03x cuBLAS), the single-consumer
# 64-row tiles serve skinny and small problems (64 x 24576 x 8192 nt: 64 x 256 st4 110 us, 1.01x; 1000^3:
# 64 x 128 st6 13.8 us where 128 x 256 took 18.7).
GEMM_GLUON = (
    ("cooperative", 128, 256, 64, 3, 8),
    ("cooperative", 128, 256, 64, 3, 1),
    ("cooperative", 128, 128, 64, 4, 8),
    ("cooperative", 128, 128, 64, 6, 8),
    ("cooperative", 256, 128, 64, 3, 8),
    ("pingpong", 128, 128, 64, 4, 8),
    ("pingpong", 64, 256, 64, 4, 8),
    ("single", 64, 128, 64, 6, 8),
    ("single", 64, 256, 64, 4, 8),
    ("single", 128, 128, 64, 4, 8),
)
# configs whose epilogue stores the C tile in 2 column halves through a half-tile buffer (`epilogue_parts=2`): the
# 32 KB it frees holds a 4th 48 KB stage of the 128 x 256 ring (229,592 B compiled for sm_90a, no spills), more
# bytes in flight where 3 stages bind (docs/kernels.md: 384 x 6144 x 4096)
GEMM_GLUON_SPLIT_EPILOGUE = (("cooperative", 128, 256, 64, 4, 8),)
# 192-row cooperative tiles: three 64-row consumer warpgroups (kernels/gemm_gluon.py), 3/4 of a 128 x 256 tile's
# work, so a grid whose 128 x 256 tiles leave a wave partly idle fills it (2000 x 3000: 264 tiles = 2 full waves of
# 132 SMs where 128 x 256 gives 192 = 1.45; cuBLAS runs 192 x 128 there). sm_90a builds (triton 3.6): 128
# registers, no spills; 213,212 B at 4 stages, 229,620 B at 5 with the C tile stored in halves
GEMM_GLUON_THREE = (("cooperative", 192, 128, 64, 4, 8),)
GEMM_GLUON_THREE_SPLIT_EPILOGUE = (("cooperative", 192, 128, 64, 5, 8),)
# stream-K twins (kernels/gemm_gluon.py, `stream_k=True`): the configs benchmarks/probes/gemm_stream_k.py measured
# (and the 192-row tile's)
GEMM_GLUON_STREAM_K = (
    ("cooperative", 128, 256, 64, 3, 8),
    ("cooperative", 128, 128, 64, 4, 8),
    ("cooperative", 128, 128, 64, 6, 8),
    ("single", 64, 256, 64, 4, 8),
    ("single", 64, 128, 64, 6, 8),
    ("cooperative", 192, 128, 64, 4, 8),
)


def gemm_gluon_fits(
    c: dict[str, Any], m: int, n: int, k: int, dtype: str, gpu: str | _gpus.GPU, layout: str = "nn"
) -> str:
    """'' when the Gluon config can run the problem on `gpu`, else the reason it cannot."""
    g = _gpus.get(gpu)
    e = _gpus.element_bytes(dtype)
    if g.arch != "hopper" or not (g.wgmma and g.tma):
        return "the Gluon GEMM is written for Hopper (wgmma + TMA)"
    if e != 2:
        return "the Gluon GEMM takes 16-bit operands"
    if (n * e) % 16 or (k * e) % 16:
        return "the Gluon GEMM needs 16-byte aligned rows of A, B (or w) and C (TMA)"
    limit = g.smem_per_block_optin - g.reserved_smem_per_block
    smem = gemm_gluon_smem_bytes(c, e)
    if smem > limit:
        return f"shared memory {smem} B > {limit} B"
    if c.get("stream_k") and cdiv(m, c["block_m"]) * 2 > g.sms:
        return f"stream-K deals each row of tiles over at least 2 CTAs: at most {g.sms // 2} rows of tiles"
    return ""


def gemm_gluon_space(
    m: int, n: int, k: int, dtype: str = "bf16", gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU, layout: str = "nn"
) -> list[dict[str, Any]]:
    """The Gluon GEMM configurations that fit `gpu` for an M x N x K problem (each a fresh dict)."""
    out = []
    for sk, parts, table in ((False, 1, GEMM_GLUON), (False, 2, GEMM_GLUON_SPLIT_EPILOGUE),
                             (False, 1, GEMM_GLUON_THREE), (False, 2, GEMM_GLUON_THREE_SPLIT_EPILOGUE),
                             (True, 1, GEMM_GLUON_STREAM_K)):  # fmt: skip
        for sched, bm, bn, bk, st, g in table:
            c = {"schedule": sched, "block_m": bm, "block_n": bn, "block_k": bk, "num_stages": st, "group_m": g}
            if sk:
                c["stream_k"] = True
            if parts > 1:
                c["epilogue_parts"] = parts
            if not gemm_gluon_fits(c, m, n, k, dtype, gpu, layout):
                out.append(c)
    return out


# ---------------------------------------------------------------------------------------------- attention

ATTN_BLOCK_M = (64, 128)
ATTN_BLOCK_N = (32, 64, 128)
ATTN_WARPS = (4, 8)
ATTN_STAGES = (2, 3)


def attention_fits(c: dict[str, Any], head_dim: int, dtype: str, gpu: str | _gpus.GPU) -> str:
    g = _gpus.get(gpu)
    groups = max(1, c["num_warps"] // 4)
    if c["block_m"] // groups < 16:
        return "fewer than 16 rows per warpgroup"
    dt = "fp16" if dtype == "fp32" else dtype
    b = attention_tile_budget(
        head_dim, c["block_n"], block_m=c["block_m"] // groups, dtype=dt, stages=c["num_stages"], gpu=g.key,
        consumers=groups,
    )  # fmt: skip
    if not b["registers"]["fits"]:
        return f"registers {b['registers']['total']:.0f} > {b['registers']['limit']}"
    e = _gpus.element_bytes(dtype)
    smem = attention_smem_bytes(c["block_m"], c["block_n"], head_dim, c["num_stages"], e)
    limit = g.smem_per_block_optin - g.reserved_smem_per_block
    if smem > limit:
        return f"shared memory {smem} B > {limit} B"
    return ""


def attention_space(
    head_dim: int, dtype: str = "bf16", gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU
) -> list[dict[str, Any]]:
    return [dict(c) for c in _attention_space(head_dim, dtype, _gpus.get(gpu).key)]


@functools.lru_cache(maxsize=256)
def _attention_space(head_dim: int, dtype: str, gpu: str) -> tuple[Any, ...]:
    out = []
    for bm in ATTN_BLOCK_M:
        for bn in ATTN_BLOCK_N:
            for w in ATTN_WARPS:
                for st in ATTN_STAGES:
                    c = {"block_m": bm, "block_n": bn, "num_warps": w, "num_stages": st}
                    if not attention_fits(c, head_dim, dtype, gpu):
                        out.append(c)
    return tuple(out)


# ---------------------------------------------------------------------------------------------- decode

# (block_n, warps, stages): the kernel's key tiles
DECODE_TILES = ((32, 4, 2), (64, 4, 2), (64, 4, 3), (128, 4, 2), (128, 4, 3), (128, 8, 3))
DECODE_SPLITS = (1, 2, 4, 8, 16, 32, 64)
DECODE_SMEM = 192 * 1024  # the kernel's K/V stage budget (kernels/decode.py _DECODE_SMEM)


def decode_space(
    batch: int,
    kv_heads: int,
    seq_len: int,
    head_dim: int,
    dtype: str = "bf16",
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
) -> list[dict[str, Any]]:
    """(block_n, warps, stages) x num_splits; a split keeps at least one key tile."""
    e = _gpus.element_bytes(dtype)
    out = []
    for bn, w, st in DECODE_TILES:
        if decode_smem_bytes(bn, head_dim, st, e) > DECODE_SMEM:
            continue
        for s in DECODE_SPLITS:
            if s > 1 and cdiv(seq_len, s) < bn:
                continue
            out.append({"block_n": bn, "num_warps": w, "num_stages": st, "num_splits": s})
    return out


# ---------------------------------------------------------------------------------------------- grouped
# The grouped GEMM's configurations (GROUPED_TILES, grouped_space) live in tilewise.model.tiles: the time
# model's composites pick from the same list the advisor ranks.

# ---------------------------------------------------------------------------------------------- tags read back

# `gemm_tag`'s spelling read back: [pws|p|sb]BMxBNxBK_gG_sS_wW_stST
_GEMM_TAG = re.compile(r"^(pws|p|sb)?(\d+)x(\d+)x(\d+)_g(\d+)_s(\d+)_w(\d+)_st(\d+)$")
# `grouped_tag`'s spelling read back, as the grouped suite's config column writes it: m16n128k128w4s4-map[-flat][-tma]
_GROUPED_TAG = re.compile(r"^m(\d+)n(\d+)k(\d+)w(\d+)s(\d+)-(map|search|inline)")


def gemm_config_from_tag(tag: str) -> dict[str, Any] | None:
    """`gemm_tag` read back: the config dict of a GEMM config tag, or None for a tag of another spelling."""
    hit = _GEMM_TAG.match(tag or "")
    if hit is None:
        return None
    p, bm, bn, bk, g, s, w, st = hit.groups()
    return {"block_m": int(bm), "block_n": int(bn), "block_k": int(bk), "group_m": int(g), "split_k": int(s),
            "num_warps": int(w), "num_stages": int(st), "persistent": p in ("p", "pws"), "warp_specialize": p == "pws",
            "stream_b": p == "sb"}  # fmt: skip


def grouped_config_from_tag(tag: str) -> dict[str, Any] | None:
    """The config dict of a grouped config tag (`grouped_tag`'s spelling, a `-flat`/`-tma` suffix allowed), or None."""
    hit = _GROUPED_TAG.match(tag or "")
    if hit is None:
        return None
    bm, bn, bk, w, st, sched = hit.groups()
    return {"block_m": int(bm), "block_n": int(bn), "block_k": int(bk), "num_warps": int(w), "num_stages": int(st),
            "schedule": sched}  # fmt: skip


# the tile arithmetic and tags are tilewise.model.tiles's, named here too: the advisor's callers read them from its space
__all__ = [
    "ATTN_BLOCK_M",
    "ATTN_BLOCK_N",
    "ATTN_STAGES",
    "ATTN_WARPS",
    "DECODE_SMEM",
    "DECODE_SPLITS",
    "DECODE_TILES",
    "DEEP_RING_STAGES",
    "GEMM_DEEP_TILES",
    "GEMM_GLUON",
    "GEMM_GLUON_SPLIT_EPILOGUE",
    "GEMM_GROUP1_TILES",
    "GEMM_PERSISTENT",
    "GEMM_SPLITS",
    "GEMM_SPLIT_TILES",
    "GEMM_STAGES",
    "GEMM_STREAM_B_TILES",
    "GEMM_TILES",
    "GROUPED_SCHEDULES",
    "GROUPED_STAGES",
    "GROUPED_TILES",
    "MAX_ACC_REGS",
    "SPILL_MAX_BYTES",
    "TAGS",
    "attention_fits",
    "attention_smem_bytes",
    "attention_space",
    "attention_tag",
    "decode_smem_bytes",
    "decode_space",
    "decode_tag",
    "gemm_acc_regs",
    "gemm_config_from_tag",
    "gemm_fits",
    "gemm_gluon_fits",
    "gemm_gluon_smem_bytes",
    "gemm_gluon_space",
    "gemm_gluon_tag",
    "gemm_grid",
    "gemm_smem_bytes",
    "gemm_space",
    "gemm_spill_bytes",
    "gemm_tag",
    "grouped_config_from_tag",
    "grouped_space",
    "grouped_tag",
]
