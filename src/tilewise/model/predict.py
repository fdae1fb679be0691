"""The time model: how long one kernel launch takes for a problem, a config and a GPU, term by term.

    predict("gemm", {"m": 1024, "n": 4096, "k": 4096, "dtype": "bf16", "layout": "nt"},
            {"block_m": 128, "block_n": 128, "block_k": 64, "num_warps": 4, "num_stages": 3}, "h200")
    -> Prediction(ms=..., terms={"tensor_core": ..., "hbm": ..., ...}, binding="tensor_core")

Pure Python (no torch, no triton), built from the model's own pieces: FLOPs and bytes from
`traffic`, waves from `waves.grid_waves`, residency from `occupancy`, peaks from the registry, and
the constants no datasheet gives from one calibration file per GPU (`calibration/<gpu>.json`,
measured by benchmarks/sweeps/sweep.py's microbenchmarks and calibration shapes; see
docs/advise.md). A GPU without a calibration file is predicted from its datasheet figures with the
H200's dimensionless efficiencies (`Prediction.calibrated` is False then).

The shape of the model, per launch:

    ms = launch + fixed + max(tensor_core, hbm, l2) + fixup

* tensor_core: the busiest SM's programs x each program's padded tile FLOPs at the SM's share of
  the Tensor-Core peak at the clock sustained under load, times the config's MMA efficiency
  (calibrated once per config on one compute-bound shape). Wave quantization and fragment padding
  are inside it, and reported as their own terms (`wave_tail`, `padding`: the part of tensor_core
  they add).
* hbm: the bytes that miss L2 (compulsory A, B, C plus the re-reads the tile order cannot keep in
  L2) at the bandwidth the resident programs can keep in flight (Little's law with the calibrated
  memory latency), capped by the measured read bandwidth, times the config's stream efficiency
  (calibrated once per config on one memory-bound shape).
* l2: every byte the programs request, at the measured L2 bandwidth.
* fixed: per program generation, the pipeline fill (latency + one stage) and the epilogue (the C
  tile written at the SM's share of bandwidth); a persistent kernel pays the fill once.
* fixup: split-K partials written and summed through L2, and the serial last program per tile.
* launch: the measured per-kernel cost inside a CUDA graph (decode's merge and grouped's schedule
  kernel are second launches).
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, shown, whole
from tilewise.model import compose, traffic, waves
from tilewise.model import tiles as _tiles
from tilewise.model.occupancy import occupancy
from tilewise.model.prediction import Prediction
from tilewise.model.tiles import row_load_bytes
from tilewise.model.waves import StreamKSplit
from tilewise.util import cdiv

# terms reported as the part of a main term they account for (never added on top)
SHARE_TERMS = ("wave_tail", "padding", "step_latency", "l2_hot_rows", "misaligned_rows")
KERNELS = ("gemm", "attention", "decode", "grouped", "moe", "ffn", "sum")  # the last three: model/compose.py
# Operands whose rows cannot be read with 16-byte loads (333 x 7777 x 2049: both leading dimensions odd)
# are copied to padded rows when the GEMM does at least this many FLOPs per byte copied: the copy
# streams at ~4 TB/s, the unaligned GEMM ran 5-10x slower than cuBLAS (kernels.gemm applies it).
PAD_MIN_FLOPS_PER_BYTE = 64
# ... and only operands of at least this many bytes: a smaller copy costs more (a launch and a dependent
# kernel, ~1.7 us each in a CUDA graph) than its unaligned reads: 100^3 bf16 ran 6.2 us padded, 2.8 us
# unpadded (cuBLAS 3.0); 333 x 7777 x 2049 fp16 (A 1.4 MB, w 32 MB) 151.5 padded, 276.5 unpadded
# (H200, benchmarks/sweeps/gemm_ab_h200.jsonl, padded and unpadded alternating in one run).
PAD_MIN_BYTES = 1 << 20


def pads_operand(useful_flops: float, nbytes: int) -> bool:
    """Whether kernels.gemm copies an operand whose rows cannot be read 16 bytes at a time to padded rows."""
    return nbytes >= PAD_MIN_BYTES and useful_flops >= PAD_MIN_FLOPS_PER_BYTE * nbytes


CAL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calibration")

# Fallbacks when a calibration file lacks a figure (order of magnitude; the H200 file has them all).
DEFAULTS: dict[str, Any] = {
    "sms": None,  # None: the registry's
    "clock_mhz": None,  # None: the registry's tensor clock
    "read_tbps": None,  # None: 0.9 x the datasheet HBM bandwidth
    "l2_tbps": None,  # None: the registry's L2 figure
    "launch_us": 2.0,
    "latency_us": 1.2,  # memory latency in Little's law: bytes in flight / latency = bandwidth
    "fill_us": 1.0,  # a program's pipeline fill beyond the latency
    # the overlap of the main terms: body = (sum of term^p)^(1/p); p = inf is the plain max (perfect
    # overlap), a finite p charges two terms of the same size 2^(1/p) - 1 extra (p = 8: +9%): loads and
    # MMAs of one program share its warps' issue slots and its ring, so they do not hide each other fully
    "overlap_p": None,  # None: inf
    # Rows whose pitch is not a multiple of the 128-byte L2 line (16-byte aligned, so the loads stay wide):
    # every tile row then straddles one more line. The load path pays for it, more than the extra sectors
    # (5 of 32 B for a 128-byte row instead of 4) say: the TMA kernel on 5000 x 5000 x 5000 ran 484 us on
    # the contiguous operands and 388 us on the same values in 128-byte aligned rows, 2000 x 3000 x 4000
    # 99.7 against 75.9 (H200, benchmarks/sweeps/gemm_align_h200.jsonl, both layouts in one run). The Tensor-Core
    # and latency terms grow by misaligned_cost x the share of the loaded bytes in such rows (calibrated).
    "misaligned_cost": 0.0,
    # Rows whose pitch is not a multiple of 8 bytes (a K or N that is not a multiple of 4 at 16 bits) and that
    # the launcher does not copy (`pads_operand`): the kernel loads them 2 or 4 bytes per lane, not 16.
    # One SM issues about 3.0e9 such lane loads a second: 333 x 7777 x 2049 fp16 a @ w.T, both operands with
    # 4098-byte rows, copying switched off, 128 x 256 x 64 tiles (93 tiles, one per SM, 384 rows x 2112 K =
    # 811k 2-byte loads each) took 276.5 us against 151.5 us copied (H200, benchmarks/sweeps/gemm_ab_h200.jsonl,
    # `nopad` row). Rows of an 8-byte pitch are left out: 100 x 100 x 100 bf16 (200-byte rows) took 2.8 us
    # uncopied in the same run, which the model gives without the term (charging them moved that problem's
    # prediction past the measurement and the calibration split's p90 from 19.2% to 20.0%).
    "narrow_load_g_per_sm": 3.0,
    "hot_line_tbps": 1.5,  # requests to one L2 line (rows that wrap onto the same A row), per distinct row
    "step_latency_us": None,  # None: latency_us. One K step's load round trip (mostly L2 hits) in a program's ring
    "l2_resident_fraction": 0.5,  # operands up to this share of L2 are read from HBM once
    # decode's own memory figures (None: the shared ones above), fitted by benchmarks/sweeps/calibrate_decode.py on
    # the decode variants (benchmarks/results/h200/decode_variants.json) and the sweep's decode calibration split:
    # the bandwidth its K/V stream sustains (SDPA and 64-key tiles at 2 stages both stream 4.51 TB/s at B64 Hq32
    # Hkv8 L4k D128, above the 4.24 TB/s of the read microbenchmark), the latency of its Little's law, and the
    # round trip of one K/V step in a program's dependent chain
    "decode_read_tbps": None,
    "decode_latency_us": None,
    "decode_step_latency_us": None,
}


# ------------------------------------------------------------------------------------------ calibration


@functools.lru_cache(maxsize=16)
def calibration(gpu: str) -> dict[str, Any]:
    """The calibration constants of `gpu` (a registry key), or {} when it was never measured."""
    path = os.path.join(CAL_DIR, f"{gpu}.json")
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(
            f"calibration file {path} must be JSON written by benchmarks/sweeps/calibrate.py: {e}"
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"calibration file {path} must hold a JSON object, got {type(data).__name__}")
    return data


@dataclass(frozen=True)
class _Machine:
    key: str
    sms: int
    calibrated: bool
    peak_flops: float  # dense 16-bit Tensor-Core FLOP/s at the sustained clock
    peak_flops_tf32: float
    read_bps: float
    l2_bps: float
    l2_bytes: int
    launch_s: float
    latency_s: float
    step_latency_s: float
    hot_line_bps: float
    overlap_p: float
    misaligned_cost: float
    narrow_load_rate: float  # lane loads a second one SM issues on rows it cannot read 8 bytes at a time
    fill_s: float
    l2_res: float
    cal: dict[str, Any]
    decode_read_bps: float  # DEFAULTS' decode_* figures (the shared ones where the calibration gives none)
    decode_latency_s: float
    decode_step_latency_s: float


@functools.lru_cache(maxsize=64)
def machine(gpu: str, overrides: tuple[tuple[str, Any], ...] = ()) -> _Machine:
    """The GPU's figures as the model uses them; `overrides` ((name, value), ...) replace constants."""
    g = _gpus.get(gpu)
    own = calibration(g.key)
    cal = own or calibration("h200")  # dimensionless efficiencies carry over; absolute figures do not
    c = {**DEFAULTS, **{k: v for k, v in cal.get("constants", {}).items() if v is not None}, **dict(overrides)}
    if own:
        clock = c["clock_mhz"] or g.tensor_clock_mhz
        read = (c["read_tbps"] or 0.9 * g.hbm_bytes_per_s / 1e12) * 1e12
        l2 = (c["l2_tbps"] or g.l2_bytes_per_s / 1e12) * 1e12
    else:  # datasheet-only: the H200's measured ratios applied to this GPU's datasheet figures
        h = _gpus.get("h200")
        hc = {**DEFAULTS, **calibration("h200").get("constants", {})}
        clock = g.tensor_clock_mhz * ((hc["clock_mhz"] or h.tensor_clock_mhz) / h.tensor_clock_mhz)
        read = g.hbm_bytes_per_s * ((hc["read_tbps"] or 0.9 * h.hbm_bytes_per_s / 1e12) * 1e12 / h.hbm_bytes_per_s)
        l2 = g.l2_bytes_per_s * ((hc["l2_tbps"] or h.l2_bytes_per_s / 1e12) * 1e12 / h.l2_bytes_per_s)
    sms = int(c.get("sms") or g.sms)  # an override scales the Tensor-Core peak with it (properties, what-ifs)
    dec_ratio = 1.0  # decode's sustained bandwidth over the read bandwidth, as calibrated (a datasheet GPU: the H200's)
    if c["decode_read_tbps"]:
        dec_ratio = c["decode_read_tbps"] / (
            c["read_tbps"] or 0.9 * (g if own else _gpus.get("h200")).hbm_bytes_per_s / 1e12
        )
    return _Machine(
        key=g.key,
        sms=sms,
        calibrated=bool(own),
        peak_flops=_gpus.peak_flops(g, "bf16", clock) * sms / g.sms,
        peak_flops_tf32=_gpus.peak_flops(g, "tf32", clock) * sms / g.sms,
        read_bps=read,
        l2_bps=l2,
        l2_bytes=g.l2_bytes,
        launch_s=c["launch_us"] * 1e-6,
        latency_s=c["latency_us"] * 1e-6,
        step_latency_s=(c["step_latency_us"] or c["latency_us"]) * 1e-6,
        hot_line_bps=c["hot_line_tbps"] * 1e12,
        overlap_p=float(c["overlap_p"] or math.inf),
        misaligned_cost=float(c["misaligned_cost"] or 0.0),
        narrow_load_rate=float(c["narrow_load_g_per_sm"] or 0.0) * 1e9,
        fill_s=c["fill_us"] * 1e-6,
        l2_res=c["l2_resident_fraction"],
        cal=cal,
        decode_read_bps=read * dec_ratio,
        decode_latency_s=(c["decode_latency_us"] or c["latency_us"]) * 1e-6,
        decode_step_latency_s=(c["decode_step_latency_us"] or c["step_latency_us"] or c["latency_us"]) * 1e-6,
    )


def _eff(mach: _Machine, kernel: str, kind: str, tag: str, forced: dict[str, Any] | None) -> float:
    """A config's rate of `kind` ("mma", "stream" or "fixed"), as benchmarks/sweeps/calibrate.py fitted it on the
    calibration split: the config's own (`configs[kernel][kind][tag]`), else the median over the family's
    configs (`constants["<kernel>_<kind>_eff_median"]`, which calibrate.py writes for every family and kind).
    No rate is guessed here: a calibration file without the median is an InputError naming the key."""
    if forced is not None and kind in forced:
        return float(forced[kind])
    v = mach.cal.get("configs", {}).get(kernel, {}).get(kind, {}).get(tag)
    if v is None:
        name = f"{kernel}_{kind}_eff_median"
        v = mach.cal.get("constants", {}).get(name)
        if v is None:
            raise InputError(
                f"the calibration of {mach.key} must give {name} (benchmarks/sweeps/calibrate.py writes it), "
                "got no such constant"
            )
    return float(v)


# ------------------------------------------------------------------------------------------ helpers


def _stream_bw(
    mach: _Machine, inflight_bytes: float, stream: float, read_bps: float | None = None, latency_s: float | None = None
) -> float:
    """Bandwidth a config sustains: Little's law (bytes in flight / latency) times its calibrated stream
    rate, never above the measured read bandwidth (a rate > 1 only says Little's law undercounts its bytes
    in flight, not that it beats the HBM). `read_bps` / `latency_s`: a family's own figures (decode's)."""
    cap = (mach.read_bps if read_bps is None else read_bps) * min(1.0, stream)
    return max(1e9, min(cap, stream * inflight_bytes / (mach.latency_s if latency_s is None else latency_s)))


def overlap(values: Iterable[float], p: float) -> float:
    """The time of terms that run at once: their max when p is inf, else (sum of v^p)^(1/p)."""
    vals = [v for v in values if v > 0]
    if not vals:
        return 0.0
    top = max(vals)
    if math.isinf(p):
        return float(top)
    return float(top * sum((v / top) ** p for v in vals) ** (1.0 / p))


def _finish(
    kernel: str,
    mach: _Machine,
    terms: dict[str, float],
    main: dict[str, float],
    detail: dict[str, Any],
    fixed_scale: float = 1.0,
    body: float | None = None,
) -> Prediction:
    """`body`: the main terms' time where a family overlaps them itself (decode: per generation), else their
    `overlap`."""
    terms = {**terms, "prologue_epilogue": terms.get("prologue_epilogue", 0.0) * fixed_scale}
    detail = {**detail, "fixed_scale": fixed_scale, "main_terms": list(main)}
    body = overlap(main.values(), mach.overlap_p) if body is None else body
    binding = max(main, key=lambda k: main[k])
    extra = {k: v for k, v in terms.items() if k not in main and k not in SHARE_TERMS}
    total = body + sum(extra.values())
    # the reported terms: everything in ms; wave_tail and padding are shares of tensor_core
    out = {k: v * 1e3 for k, v in {**main, **terms}.items()}
    fixed = {k: v for k, v in extra.items()}
    if fixed and max(fixed.values()) > body:
        binding = max(fixed, key=lambda k: fixed[k])
    return Prediction(kernel, total * 1e3, out, binding, mach.key, mach.calibrated, detail)


def _clamped_sum(a: int, b: int, n: int, cap: int) -> float:
    """sum over i < n of min(cap, max(0, a + b i)), b > 0, in O(1)."""
    lo = 0 if a >= 0 else min(n, cdiv(-a, b))  # first i with a + b i >= 0 (approximately: >= 0 only)
    hi = n if a + b * (n - 1) <= cap else max(lo, min(n, (cap - a) // b + 1))  # first i above cap
    s = 0.0
    if hi > lo:
        s += (hi - lo) * a + b * (hi - 1 + lo) * (hi - lo) / 2
    return s + (n - hi) * cap


@functools.lru_cache(maxsize=4096)
def _blocks_per_sm(gpu: str, warps: int, acc_regs: float, smem: int) -> int:
    regs = int(min(255, 48 + acc_regs))
    try:
        return max(1, occupancy(gpu, threads=32 * warps, registers=regs, dynamic_smem=smem).blocks_per_sm)
    except InputError:
        return 1


# ------------------------------------------------------------------------------------------ GEMM
#
# One function per term; `_gemm` adds them up. Every term reads the launch's geometry (`_GemmLaunch`).

_GEMM_DEFAULTS: dict[str, Any] = {
    "group_m": 8,
    "split_k": 1,
    "num_warps": 4,
    "num_stages": 3,
    "persistent": False,
    "warp_specialize": False,
    "stream_b": False,
}


@dataclass(frozen=True)
class _GemmLaunch:
    """What one GEMM launch looks like on the GPU: its tiles, K split, residency and the busiest SM's share."""

    m: int
    n: int
    k: int
    e: int  # operand bytes
    nt: bool  # B given as w [N, K] (a @ w.T)
    bm: int
    bn: int
    bk: int
    stages: int
    persistent: bool
    group_m: int
    split: int  # K splits after the launcher drops the empty ones
    k_per: int  # K of one split (a multiple of bk)
    tiles_m: int
    tiles_n: int
    tiles: int
    blocks_per_sm: int
    programs: int
    busiest: float  # persistent: tiles of the busiest program (stream-K: a fraction); else programs per SM
    active: int  # programs resident at once
    waves: float
    stream_k: StreamKSplit | None = None  # the stream-K deal, when the config has one


def _gemm_launch(p: dict[str, Any], c: dict[str, Any], mach: _Machine) -> _GemmLaunch:
    m, n, k = p["m"], p["n"], p["k"]
    layout = p.get("layout", "nn")
    if layout not in ("nn", "nt"):
        raise InputError(f"gemm layout must be 'nn' or 'nt', got {shown(layout)}")
    e = _gpus.element_bytes(p.get("dtype", "bf16"))
    cfg = {**_GEMM_DEFAULTS, **c}
    bm, bn, bk = c["block_m"], c["block_n"], c["block_k"]
    persistent = bool(c.get("persistent", False))
    split = 1 if persistent else max(1, int(c.get("split_k", 1)))
    tiles_m, tiles_n = cdiv(m, bm), cdiv(n, bn)
    tiles = tiles_m * tiles_n
    k_per = cdiv(cdiv(k, bk), split) * bk
    split = cdiv(k, k_per)  # the launcher drops empty splits
    sms = mach.sms
    stream_k = None
    if persistent and c.get("stream_k"):
        # the steps dealt out by lanes (waves.stream_k_split): the busiest CTA runs ceil(lane steps / per_lane)
        stream_k = waves.stream_k_split(tiles_m, tiles_n, cdiv(k, bk), sms)
        b = 1
        programs = stream_k.grid
        busiest = cdiv(stream_k.lane_units, stream_k.per_lane) / stream_k.k_steps  # in tiles (a fraction)
        active = programs
        wave_count = busiest
    elif persistent:
        b = 1
        programs = min(sms, tiles)
        busiest = cdiv(tiles, programs)
        active = programs
        wave_count = tiles / programs
    else:
        b = _blocks_per_sm(mach.key, cfg["num_warps"], _tiles.gemm_acc_regs(cfg), _tiles.gemm_smem_bytes(cfg, e))
        programs = tiles * split
        busiest = cdiv(programs, sms)
        active = min(programs, sms * b)
        wave_count = waves.grid_waves(programs, sms, b).waves
    return _GemmLaunch(
        m=m, n=n, k=k, e=e, nt=layout == "nt", bm=bm, bn=bn, bk=bk, stages=cfg["num_stages"],
        persistent=persistent, group_m=int(c.get("group_m", 8)), split=split, k_per=k_per, tiles_m=tiles_m,
        tiles_n=tiles_n, tiles=tiles, blocks_per_sm=b, programs=programs, busiest=busiest, active=active,
        waves=wave_count, stream_k=stream_k,
    )  # fmt: skip


def _gemm_compute(g: _GemmLaunch, mach: _Machine, mma_eff: float, useful: float) -> tuple[float, float, float]:
    """(tensor_core, even, padding) in seconds: the busiest SM's tile FLOPs at its share of the Tensor-Core peak
    times the config's MMA efficiency; `even` is the same work spread over every SM (tensor_core - even is the
    wave tail), padding the part of `even` spent on the tiles' rows and columns past M, N and K."""
    peak = mach.peak_flops_tf32 if g.e == 4 else mach.peak_flops
    per_sm = peak / mach.sms * mma_eff
    tile_flops = 2 * g.bm * g.bn * g.k_per
    t_tc = g.busiest * tile_flops / per_sm
    t_even = g.tiles * g.split / mach.sms * tile_flops / per_sm
    t_pad = t_even * (1 - useful / (g.tiles * g.split * tile_flops))
    return t_tc, t_even, t_pad


def _gemm_hbm_bytes(g: _GemmLaunch, mach: _Machine) -> int | float:
    """Bytes that miss L2: compulsory A, B and C, plus the re-reads when the operands do not stay in L2."""
    a_bytes, b_bytes, c_bytes = g.m * g.k * g.e, g.k * g.n * g.e, g.m * g.n * g.e
    if a_bytes + b_bytes <= mach.l2_res * mach.l2_bytes:
        return a_bytes + b_bytes + c_bytes
    # the programs that run at once cover `rows` row tiles x `cols` column tiles (grouped order); each
    # such wave reads its A rows and B columns from HBM: tiles / (rows x cols) waves (not rounded up, so
    # more concurrency never reads more)
    group = min(g.group_m, g.tiles_m)
    conc = max(1, min(g.tiles, g.active))
    rows = min(g.tiles_m, max(group, cdiv(conc, g.tiles_n)))
    cols = min(g.tiles_n, max(1, conc / rows))
    reread = g.tiles * g.k * g.e * (g.bm / cols + g.bn / rows)
    return max(a_bytes + b_bytes, reread) + c_bytes


def _gemm_inflight(g: _GemmLaunch) -> int:
    """Load bytes in flight: `stages - 1` K steps ahead of the MMA for every resident program. Below 64 rows
    triton 3.6 keeps one shared-memory buffer fewer (tiles.gemm_smem_bytes) but still issues the loads
    stages - 1 steps ahead (the last lands in registers): counting stages - 2 there over-predicted the
    3-stage skinny tiles by +0.33 in log on 3 x 4096 x 4096 (16 x 128 x 128: 34 us predicted, 20.5 measured)."""
    return g.active * max(1, g.stages - 1) * (g.bm + g.bn) * g.bk * g.e


def _gemm_load(hbm_bytes: float, inflight: float, mach: _Machine, stream_eff: float) -> float:
    """hbm: the bytes that miss L2 at the bandwidth the resident programs keep in flight (Little's law)."""
    return hbm_bytes / _stream_bw(mach, inflight, stream_eff)


def _gemm_l2_bytes(g: _GemmLaunch) -> int:
    """Every byte the programs request: each program's A and B tiles over its K split."""
    return g.tiles * g.split * (g.bm + g.bn) * g.k_per * g.e


def _gemm_latency(g: _GemmLaunch, mach: _Machine) -> float:
    """The stages' bound. Little's law per program: a program keeps `stages - 1` K steps of loads in flight, so
    it cannot take a step faster than one load round trip / (stages - 1), whatever the bandwidth left over.
    It binds where few programs share an SM: 256 x 6144 x 4096 with 128 x 128 x 64 tiles (96 tiles, one per
    SM, 64 steps) took 35.6 us at 3 stages and 28.0 us at 4: 64 x 1.1 us / 2 = 35 us and 64 x 1.1 / 3 = 23 us
    (then the Tensor Cores bind)."""
    gens = g.busiest if g.persistent else cdiv(int(g.busiest), g.blocks_per_sm)
    return gens * cdiv(g.k_per, g.bk) * mach.step_latency_s / max(1, g.stages - 1)


def _gemm_fill_epilogue(g: _GemmLaunch, mach: _Machine) -> float:
    """prologue_epilogue: per program generation on the busiest SM, the pipeline fill (latency + one stage) and
    the epilogue (the C tile), at an SM's share of the bandwidth; a persistent program fills once and its
    next tile's loads overlap half of each store."""
    sm_bw = mach.read_bps / _gpus.get(mach.key).sms  # an SM's share of the bandwidth (the registry's SM count)
    fill = mach.latency_s + mach.fill_s + (g.bm + g.bn) * g.bk * g.e / sm_bw
    epi = g.bm * g.bn * g.e / sm_bw
    if g.persistent:
        return fill + g.busiest * epi * 0.5
    return cdiv(int(g.busiest), g.blocks_per_sm) * (fill + epi)


def _gemm_split_fixup(g: _GemmLaunch, mach: _Machine) -> float:
    """split_k_fixup: fp32 partials written and read back through L2, and per program generation one round
    trip of the counter before the last split sums (serial, deterministic). A persistent launch never splits."""
    if g.stream_k is not None:
        return _gemm_stream_k_fixup(g, mach)
    if g.split == 1:
        return 0.0
    part = g.bm * g.bn * 4
    return (3 * g.tiles * g.split * part) / mach.l2_bps + cdiv(int(g.busiest), g.blocks_per_sm) * mach.latency_s


def _gemm_stream_k_fixup(g: _GemmLaunch, mach: _Machine) -> float:
    """split_k_fixup of stream-K: a CTA that ran a later part of a tile writes its fp32 partial once; the owner
    reads its partners' partials one after another (each a flag round trip, then the tile's fp32 bytes at an
    SM's share of the L2 bandwidth), so the busiest owner's chain is the cost."""
    sk = g.stream_k
    assert sk is not None  # the caller checked
    segs = waves.stream_k_segments(waves.StreamKSplit(1, sk.per_lane, sk.lane_units, sk.k_steps))  # one lane
    owners = [len(s.partners) for cta in segs for s in cta if s.role == "owner"]
    if not owners:
        return 0.0
    part_s = g.bm * g.bn * 4 / (mach.l2_bps / mach.sms)
    return part_s + max(owners) * (mach.latency_s + part_s)


def _gemm_operand_copy(g: _GemmLaunch, mach: _Machine, useful: float) -> float:
    """operand_copy: operands the launcher copies to 16-byte aligned rows first (`pads_operand`): a read and a
    write, and a launch each."""
    t = 0.0
    for nbytes, aligned in (
        (g.m * g.k * g.e, (g.k * g.e) % 16 == 0 or g.m == 1 or g.k == 1),
        (g.k * g.n * g.e, (g.k * g.e) % 16 == 0 if g.nt else ((g.n * g.e) % 16 == 0 or g.n == 1 or g.k == 1)),
    ):
        if not aligned and pads_operand(useful, nbytes):
            t += 2 * nbytes / mach.read_bps + mach.launch_s
    return t


# rows read at least this many bytes per lane are wide enough for the narrow-load term to leave out
NARROW_LOAD_MIN_BYTES = 8


def _gemm_narrow_loads(g: _GemmLaunch, mach: _Machine, useful: float) -> float:
    """narrow_loads: the busiest SM's lane loads of operands whose rows it reads under NARROW_LOAD_MIN_BYTES at a
    time (and the launcher does not copy, `pads_operand`) at DEFAULTS' narrow_load_g_per_sm. An operand of one
    row (M = 1 for A, N = 1 for w) or K = 1 has no row pitch to misalign. A persistent launch needs 16-byte rows
    (TMA), so it never pays this."""
    if g.persistent or mach.narrow_load_rate <= 0:
        return 0.0
    lanes = 0.0
    for rows, pitch, nbytes, single in (
        (g.bm, g.k * g.e, g.m * g.k * g.e, g.m == 1 or g.k == 1),
        (g.bn, (g.k if g.nt else g.n) * g.e, g.k * g.n * g.e, g.n == 1 or g.k == 1),
    ):
        w = row_load_bytes(pitch)
        if w >= NARROW_LOAD_MIN_BYTES or single or pads_operand(useful, nbytes):
            continue
        lanes += rows * g.k_per * g.e / w
    return g.busiest * lanes / mach.narrow_load_rate


def _gemm_hot_rows(g: _GemmLaunch, mach: _Machine) -> float:
    """l2_hot_rows: rows past M wrap onto row (r % M) (the loads need no mask), so below BLOCK_M rows every program
    requests BLOCK_M rows of A per K step that are only M distinct rows, all programs the same ones (there is one
    row tile). The 64+ row tiles load through cp.async, which bypasses L1: every copy reaches the L2 slice that
    holds the line, and the same few lines serialize there. At M = 1, 1 x 28672 x 4096: 256 x 128 tiles took
    308 us (224 programs x 256 rows x 8 KB = 470 MB of A requests: 1.5 TB/s on one line per K step), 128 x 128
    181 us (235 MB); 16-row tiles (mma.sync, loads through L1, which merges the copies) stream B at the HBM rate.
    More distinct rows spread the requests over as many lines (M = 4: residual -0.09 in log before this term,
    M = 1: -0.5). The queue at the hot lines lengthens every K step's round trip, so `_gemm` adds it to the
    latency term (a step needs both operands; the ring slot waiting on A holds B's next loads back too): as a
    term of its own (overlapping B's stream) the 1-16 row problems stayed under-predicted by 0.3-0.6 in log."""
    if g.m < g.bm and g.bm >= 64 and not g.persistent:
        return g.tiles * g.split * g.bm * g.k_per * g.e / (mach.hot_line_bps * g.m)
    return 0.0


def _misaligned_cost(mach: _Machine, tag: str, forced: dict[str, Any] | None) -> float:
    """A config's cost of rows that straddle L2 lines: the forced value (the Gluon kernel's own, or a fit's trial),
    else the config's own (`configs["gemm"]["misaligned"][tag]`, which benchmarks/sweeps/calibrate.py fits per
    config), else the family's constant (DEFAULTS' misaligned_cost; `tilewise.advise.kernel` forces it for another
    kernel's configs, whose tiles may share our tags: the table describes our kernel's loads, not theirs)."""
    if forced is not None and "misaligned" in forced:
        return float(forced["misaligned"])
    v = mach.cal.get("configs", {}).get("gemm", {}).get("misaligned", {}).get(tag)
    return float(mach.misaligned_cost if v is None else v)


def _gemm_misaligned(g: _GemmLaunch, cost: float) -> float:
    """The slowdown of the load path on rows whose pitch is not a multiple of the 128-byte L2 line: 1 + cost x the
    share of the loaded tile rows that straddle a line (`_misaligned_cost`)."""
    rows_a = g.k * g.e  # A [M, K] row-major; B [K, N] (nn) or w [N, K] (nt)
    rows_b = g.k * g.e if g.nt else g.n * g.e
    mis = (g.bm * (rows_a % 128 != 0) + g.bn * (rows_b % 128 != 0)) / (g.bm + g.bn)
    return 1.0 + cost * mis


def _gemm(p: dict[str, Any], c: dict[str, Any], mach: _Machine, eff: dict[str, Any] | None = None) -> Prediction:
    g = _gemm_launch(p, c, mach)
    tag = _tiles.gemm_tag({**_GEMM_DEFAULTS, **c})
    mma_eff = _eff(mach, "gemm", "mma", tag, eff)
    stream_eff = _eff(mach, "gemm", "stream", tag, eff)
    useful = traffic.gemm_flops(g.m, g.n, g.k)

    t_tc, t_even, t_pad = _gemm_compute(g, mach, mma_eff, useful)
    hbm_bytes = _gemm_hbm_bytes(g, mach)
    inflight = _gemm_inflight(g)
    t_hbm = _gemm_load(hbm_bytes, inflight, mach, stream_eff)
    req_bytes = _gemm_l2_bytes(g)
    t_l2 = req_bytes / mach.l2_bps
    t_lat = _gemm_latency(g, mach)
    t_hot = _gemm_hot_rows(g, mach)
    slow = _gemm_misaligned(g, _misaligned_cost(mach, tag, eff))

    terms = {
        "wave_tail": max(0.0, t_tc - t_even),
        "padding": max(0.0, t_pad),
        "operand_copy": _gemm_operand_copy(g, mach, useful),
        "prologue_epilogue": _gemm_fill_epilogue(g, mach),
        "split_k_fixup": _gemm_split_fixup(g, mach),
        "launch": mach.launch_s,
        "l2_hot_rows": t_hot,
        "misaligned_rows": (t_tc + t_lat + t_hot) * (slow - 1.0),
    }
    detail = {
        "tiles": g.tiles,
        "programs": g.programs,
        "split_k": g.split,
        "blocks_per_sm": g.blocks_per_sm,
        "waves": g.waves,
        "hbm_bytes": hbm_bytes,
        "l2_bytes": req_bytes,
        "mma_eff": mma_eff,
        "stream_eff": stream_eff,
        "bytes_in_flight": inflight,
        "flops": useful,
    }
    main = {"tensor_core": t_tc * slow, "hbm": t_hbm, "l2": t_l2, "latency": (t_lat + t_hot) * slow}
    t_narrow = _gemm_narrow_loads(g, mach, useful)
    if t_narrow:
        main["narrow_loads"] = t_narrow
    return _finish("gemm", mach, terms, main, detail, _eff(mach, "gemm", "fixed", tag, eff))


@functools.lru_cache(maxsize=16)
def gluon_calibration(gpu: str) -> dict[str, Any]:
    """The Gluon GEMM's per-config rates on `gpu` (`calibration/<gpu>_gemm_gluon.json`), or {}."""
    path = os.path.join(CAL_DIR, f"{gpu}_gemm_gluon.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        data: dict[str, Any] = json.load(f)
    return data


def gemm_gluon(
    p: dict[str, Any], c: dict[str, Any], gpu: str = _gpus.DEFAULT_GPU, efficiency: dict[str, Any] | None = None
) -> Prediction:
    """Predicted time of the Gluon GEMM (kernels/gemm_gluon.py) with config `c` (an advise.space.gemm_gluon_space
    entry: schedule, block_m, block_n, block_k, num_stages, group_m, stream_k).

    The same terms as the persistent Triton kernel (`_gemm` with persistent=True: one CTA per SM walking
    its tiles, the fill paid once, the epilogue's store half hidden behind the next tile; a stream-K config
    the deal of `waves.stream_k_split` and its fix-up), at the Gluon config's own rates: its MMA and stream
    efficiencies, fixed-cost scale and cost of rows that are not 128-byte aligned, fitted on the calibration
    split of the sweep of the Gluon space (benchmarks/sweeps/calibrate_gluon.py from
    tests/data/sweeps/h200/gemm_gluon.jsonl). A cooperative CTA tile is 2 consumer warpgroups (8 warps; 3, 12 warps,
    for 192 rows), pingpong and single 1 at a time.
    """
    key = _gpus.get(gpu).key
    cal = gluon_calibration(key) or gluon_calibration("h200")  # dimensionless rates carry over, like machine()'s
    tag = _tiles.gemm_gluon_tag(c)
    # a config the calibration has not seen takes its data-parallel twin's rates (same tiles and ring), then the
    # family's medians
    rates = cal.get("configs", {}).get(tag) or cal.get("configs", {}).get(
        _tiles.gemm_gluon_tag({**c, "stream_k": False}), {}
    )
    med = cal.get("medians", {})
    eff = dict(efficiency or {})
    for kind in ("mma", "stream", "fixed", "misaligned"):  # the config's own rate, else the median: none guessed
        if kind not in eff:
            if kind not in rates and kind not in med:
                raise InputError(
                    f"the Gluon GEMM calibration of {key} must give medians.{kind} "
                    "(benchmarks/sweeps/calibrate_gluon.py writes it), got none"
                )
            eff[kind] = rates.get(kind, med.get(kind))
    # TMA reads rows that are 16- but not 128-byte aligned at each config's own cost (eff["misaligned"], which
    # `_misaligned_cost` takes before the pointer kernel's table)
    mach = machine(key)
    warps = 4 * _tiles.gemm_gluon_consumers(c) if c["schedule"] == "cooperative" else 4
    tc = {"block_m": c["block_m"], "block_n": c["block_n"], "block_k": c["block_k"], "group_m": c.get("group_m", 8),
          "num_warps": warps, "num_stages": c["num_stages"], "persistent": True,
          "stream_k": bool(c.get("stream_k"))}  # fmt: skip
    pred = _gemm(p, tc, mach, eff)
    return Prediction("gemm_gluon", pred.ms, pred.terms, pred.binding, pred.gpu, pred.calibrated,
                      {**pred.detail, "tag": tag})  # fmt: skip


# ------------------------------------------------------------------------------------------ attention


def _attention(p: dict[str, Any], c: dict[str, Any], mach: _Machine, eff: dict[str, Any] | None = None) -> Prediction:
    B, H, Hk = p["batch"], p["heads"], p["kv_heads"]
    sq, sk, d = p["seq_q"], p["seq_k"], p["head_dim"]
    causal = bool(p.get("causal", False))
    e = _gpus.element_bytes(p.get("dtype", "bf16"))
    bm, bn, w, st = c["block_m"], c["block_n"], c["num_warps"], c["num_stages"]
    tag = f"d{d}:" + _tiles.attention_tag(c)
    sms = mach.sms
    q_tiles = cdiv(sq, bm)
    programs = q_tiles * B * H
    mma_eff = _eff(mach, "attention", "mma", tag, eff)
    per_sm = mach.peak_flops / sms * mma_eff
    # each query tile walks the key tiles it sees (causal: up to the diagonal, bottom-right aligned);
    # in closed form so a 4M-token sequence costs no more to predict than a short one
    full = cdiv(sk, bn) * bn
    if causal:
        keys = _clamped_sum(bm + sk - sq, bm, q_tiles, sk) + q_tiles * bn / 2  # + half a tile of rounding
        longest = min(full, cdiv(max(0, q_tiles * bm + sk - sq), bn) * bn)
    else:
        keys, longest = q_tiles * full, full
    total = 4 * bm * keys * d * B * H
    longest = 4 * bm * longest * d
    smem = _tiles.attention_smem_bytes(bm, bn, d, st, e)
    b = _blocks_per_sm(mach.key, w, bm * d / (32 * w) * 2, smem)
    # longest-first greedy over sms x b slots, programs of one head next to each other
    t_even = total / (sms * per_sm)
    t_tc = max(t_even, longest / (per_sm / b) if programs <= sms * b else t_even + longest / per_sm * 0.5)
    if programs > sms * b:
        w_ = waves.grid_waves(programs, sms, b)
        t_tc = max(t_tc, t_even / max(w_.efficiency, 1e-9) if not causal else t_even)
    useful = traffic.attention_flops(B, H, sq, sk, d, causal)
    hbm = (2 * B * H * sq * d + 2 * B * Hk * sk * d) * e
    kv_req = programs * (cdiv(sk, bn) * bn if not causal else sk / 2 + bm) * 2 * d * e
    active = min(programs, sms * b)
    inflight = active * max(1, st - 1) * 2 * bn * d * e
    t_hbm = hbm / _stream_bw(mach, inflight, _eff(mach, "attention", "stream", tag, eff))
    t_l2 = kv_req / mach.l2_bps
    sm_bw = mach.read_bps / _gpus.get(mach.key).sms
    fill = mach.latency_s + mach.fill_s + (bm * d + 2 * bn * d) * e / sm_bw
    t_fixed = cdiv(cdiv(programs, sms), b) * (fill + bm * d * e / sm_bw)
    terms = {"prologue_epilogue": t_fixed, "launch": mach.launch_s, "wave_tail": max(0.0, t_tc - t_even)}
    detail = {"programs": programs, "blocks_per_sm": b, "flops": useful, "hbm_bytes": hbm, "mma_eff": mma_eff}
    fixed = _eff(mach, "attention", "fixed", tag, eff)
    return _finish("attention", mach, terms, {"tensor_core": t_tc, "hbm": t_hbm, "l2": t_l2}, detail, fixed)


# ------------------------------------------------------------------------------------------ decode


def _decode_bw(mach: _Machine, inflight_bytes: float, stream: float) -> float:
    """`_stream_bw` at decode's own figures: Little's law over its latency, capped by the bandwidth decode's K/V
    stream sustains (DEFAULTS' decode_read_tbps, decode_latency_us)."""
    return _stream_bw(mach, inflight_bytes, stream, mach.decode_read_bps, mach.decode_latency_s)


def _decode(p: dict[str, Any], c: dict[str, Any], mach: _Machine, eff: dict[str, Any] | None = None) -> Prediction:
    B, Hq, Hk, L, d = p["batch"], p["heads"], p["kv_heads"], p["seq_len"], p["head_dim"]
    e = _gpus.element_bytes(p.get("dtype", "bf16"))
    bn, w, st, s = c["block_n"], c["num_warps"], c["num_stages"], c["num_splits"]
    tag = _tiles.decode_tag({**c, "num_splits": 1})
    chunk = cdiv(cdiv(max(L, 1), s), bn) * bn
    splits = cdiv(max(L, 1), chunk)
    sms = mach.sms
    # Ragged lengths (`total_keys` < batch x seq_len): a split past its sequence's end loads nothing and exits,
    # so only the splits with keys count: the total over the chunk, plus about half a chunk per sequence
    # (its last split is partly filled), never more than every split. Lengths 1k-64k over 32 sequences:
    # 1,064,960 keys, not 32 x 65,536.
    total = p.get("total_keys", B * L)
    ragged = total < B * L
    programs = min(B * Hk * splits, Hk * cdiv(2 * total + B * chunk, 2 * chunk)) if ragged else B * Hk * splits
    smem = _tiles.decode_smem_compiled(bn, d, st, e)
    b = _blocks_per_sm(mach.key, w, _tiles.decode_registers(bn, d, w, e) - 48, smem)  # 48: _blocks_per_sm's base
    kv = 2 * Hk * total * d * e
    group = Hq // Hk
    part = splits * B * Hq * (d + 1) * 4 if splits > 1 else 0
    stream = _eff(mach, "decode", "stream", tag, eff)
    mma_eff = _eff(mach, "decode", "mma", tag, eff)
    slots = sms * b
    gens = cdiv(programs, slots)
    per_prog_bytes = kv / programs if ragged else 2 * chunk * d * e  # ragged: the mean split's keys
    per_inflight = max(1, st - 1) * 2 * bn * d * e
    steps = per_prog_bytes / (2 * bn * d * e)
    # One K/V step of a program is a dependent chain: its QK, softmax and PV on the SM's Tensor Cores (shared by
    # the programs resident there, so k of them take k times as long), then the round trip of the next tile,
    # of which `stages - 1` are in flight.
    t_step = 4 * max(16, group) * bn * d / (mach.peak_flops / sms * mma_eff)
    t_trip = mach.decode_step_latency_s / max(1, st - 1)
    # The programs run in generations of `slots`, and a generation ends when its slower side does: its bytes at
    # the bandwidth its bytes in flight allow, or the chain of the busiest SM. Summing per generation, not over
    # the launch, charges a short last generation its own chain, which the full ones cannot hide: B64 Hq32 Hkv8
    # L4k D128 in 64-key tiles at 3 stages (3 programs per SM: 512 programs = 396 + 116) ran 264.2 us, at 2
    # stages (4 per SM, one generation) 237.9 (H200, benchmarks/results/h200/decode_variants.json); one
    # overlap over the launch had predicted 260.2 and 264.1.
    t_mem = t_chain = t_trips = body = 0.0
    for n, count in ((slots, gens - 1), (programs - (gens - 1) * slots, 1)):
        if count <= 0:
            continue
        per_sm = cdiv(n, sms)
        mem = n * per_prog_bytes / _decode_bw(mach, n * per_inflight, stream)
        chain = steps * (per_sm * t_step + t_trip)
        body += count * overlap((mem, chain), mach.overlap_p)
        t_mem, t_chain, t_trips = t_mem + count * mem, t_chain + count * chain, t_trips + count * steps * t_trip
    # and no sooner than every byte at the sustained bandwidth, or one full chunk (a ragged batch's longest
    # sequence) streams and walks its chain alone
    alone = max(2 * chunk * d * e / _decode_bw(mach, per_inflight, stream), (chunk // bn) * (t_step + t_trip))
    t_mem = max(t_mem, kv / _decode_bw(mach, math.inf, stream), alone)
    body = max(body, t_mem, alone)
    t_l2 = (kv + 2 * part) / mach.l2_bps
    body = overlap((body, t_l2), mach.overlap_p)
    sm_bw = mach.read_bps / _gpus.get(mach.key).sms
    t_fixed = gens * (mach.latency_s + mach.fill_s + 2 * bn * d * e / sm_bw)
    # a config without "merge" is priced at the placement the kernel takes in a CUDA graph: the shorter one
    merges = (c["merge"],) if "merge" in c else DECODE_MERGES
    t_merge = min(decode_merge_s(mach, m, B, Hk, group, splits, d, gens, b) for m in merges)
    flops = 4 * Hq * total * d
    terms = {"prologue_epilogue": t_fixed, "split_merge": t_merge, "launch": mach.launch_s, "step_latency": t_trips}
    detail = {"programs": programs, "splits": splits, "chunk": chunk, "blocks_per_sm": b, "hbm_bytes": kv + part,
              "stream_eff": stream, "bytes_in_flight": min(programs, slots) * per_inflight, "flops": flops,
              "mma_eff": mma_eff, "generations": gens}  # fmt: skip
    fixed = _eff(mach, "decode", "fixed", tag, eff)
    main = {"hbm": t_mem, "l2": t_l2, "tensor_core": t_chain}  # the chain: compute + round trips
    return _finish("decode", mach, terms, main, detail, fixed, body=body)


# Where the split partials are merged (kernels.decode): "inline", by the last split of each (sequence, KV head)
# to take a counter, in the same launch; or "launch", a second kernel with one program per pair.
DECODE_MERGES = ("inline", "launch")
# Host time of one decode call on the H200's host (benchmarks/results/h200/host_launch_profile.json):
# B1 Hq32 Hkv8 L8k 20.8 us per call with its launches, 12.0 us without; a direct launch 4.9 us.
DECODE_HOST_S = 12.0e-6
HOST_LAUNCH_S = 4.9e-6
# What an inline merge costs per program on the busiest SM (`decode_merge_s`): each split program, before it
# exits, takes its (sequence, KV head)'s counter (acquire-release, one round trip that its SM's other residents
# hide only in part). Fitted to the 349 (shape, tile, split count) pairs timed with both placements in CUDA
# graphs (H200, benchmarks/results/h200/decode_variants.json): inline minus launch = 3.4 us + 0.45 us x
# programs / 132 SMs by least squares. With the rest of the model, 0.45 us places the merge as measured (or
# within 1 us) on 293 of the 349 pairs, losing 1.0 us a pair on average (0.15 / 0.3 / 0.7 / 1.0 us: 235 / 280 /
# 292 / 280 pairs); the per-generation rule it replaces placed 180, losing 6.8 us.
DECODE_INLINE_PROGRAM_S = 0.45e-6


def decode_merge_s(
    mach: _Machine, merge: str, batch: int, kv_heads: int, group: int, splits: int, head_dim: int, gens: int,
    blocks_per_sm: int,
) -> float:  # fmt: skip
    """Seconds the merge of `splits` partials adds to a decode step on the GPU (0 for one split).

    launch: a second, dependent kernel: its launch inside a graph, its fill (a memory round trip and the
    pipeline start), the partials (splits x group x (D + 1) floats per pair) read at the HBM rate by every
    SM at once, and one pair's share at an SM's bandwidth.
    inline: the last split of a pair takes a counter (one round trip) and reads the pair's partials alone
    at an SM's share: the launch's tail once; and every program pays DECODE_INLINE_PROGRAM_S for its counter,
    ceil(programs / SMs) of them on the busiest SM (`gens` and `blocks_per_sm` do not enter: co-resident
    programs hide each other's counters no better than the fit says).
    Measured on the H200 (benchmarks/results/h200/decode_variants.json, CUDA graphs): at one generation of
    128 programs the inline merge is 1-1.5 us faster (B1 Hq32 Hkv8 L128k, 16 splits of 128-key tiles: 126.8
    against 128.2 us); with thousands of programs the launch wins by 10-20 us (B8 ragged 1k-32k, 64 splits
    of 32-key tiles: 193.1 against 180.7 us).
    """
    if splits <= 1:
        return 0.0
    if merge not in DECODE_MERGES:
        raise InputError(f"merge must be one of {', '.join(DECODE_MERGES)}, got {merge!r}")
    sm_bw = mach.read_bps / _gpus.get(mach.key).sms
    pair = splits * group * (head_dim + 1) * 4  # bytes of one (sequence, KV head)'s partials
    if merge == "launch":
        fill = mach.latency_s + mach.fill_s
        return mach.launch_s + fill + batch * kv_heads * pair / mach.read_bps + pair / sm_bw
    tail = mach.latency_s + pair / sm_bw
    return mach.latency_s + tail + cdiv(batch * kv_heads * splits, mach.sms) * DECODE_INLINE_PROGRAM_S


def decode_merge(problem: dict[str, Any], config: dict[str, Any], gpu: str = "h200", *, graph: bool = True) -> str:
    """The merge placement (DECODE_MERGES) of the shorter predicted step: device time in a CUDA graph
    (`graph`), else the step as a host-bound eager call sees it, max(host time, device time), where the
    second launch costs the host HOST_LAUNCH_S."""
    c = {k: v for k, v in config.items() if k != "merge"}
    if c.get("num_splits", 1) <= 1:
        return "inline"
    t = {m: predict("decode", problem, {**c, "merge": m}, gpu).ms * 1e-3 for m in DECODE_MERGES}
    if not graph:
        t = {m: max(DECODE_HOST_S + HOST_LAUNCH_S * (2 if m == "launch" else 1), s) for m, s in t.items()}
    return min(DECODE_MERGES, key=lambda m: (t[m], m != "inline"))


# ------------------------------------------------------------------------------------------ grouped GEMM


def _grouped(p: dict[str, Any], c: dict[str, Any], mach: _Machine, eff: dict[str, Any] | None = None) -> Prediction:
    E, r, n, k = p["experts"], p["rows_per_expert"], p["n"], p["k"]
    e = _gpus.element_bytes(p.get("dtype", "bf16"))
    bm, bn, bk, st = c["block_m"], c["block_n"], c["block_k"], c["num_stages"]
    sched = c.get("schedule", "map")
    tag = _tiles.grouped_tag(c)
    sms = mach.sms
    m_tiles = cdiv(r, bm) if r > 0 else 0
    tiles = E * m_tiles * cdiv(n, bn)
    per_prog = cdiv(tiles, sms)
    mma_eff = _eff(mach, "grouped", "mma", tag, eff)
    per_sm = mach.peak_flops / sms * mma_eff
    tile_flops = 2 * bm * bn * k
    t_tc = per_prog * tile_flops / per_sm
    t_even = tiles * tile_flops / (sms * per_sm)
    useful = 2 * E * r * n * k
    w_bytes = E * k * n * e
    hbm = w_bytes + E * r * (k + n) * e
    active = min(tiles, sms)
    inflight = active * max(1, st - 1) * (bm + bn) * bk * e
    stream = _eff(mach, "grouped", "stream", tag, eff)
    t_hbm = hbm / _stream_bw(mach, inflight, stream)
    t_l2 = tiles * (bm + bn) * k * e / mach.l2_bps
    sm_bw = mach.read_bps / _gpus.get(mach.key).sms
    # per tile: a refill of the pipeline (one latency) and the store; the schedule's lookup
    steps = max(0, math.ceil(math.log2(E))) if E > 1 else 0
    lookup = mach.latency_s * (steps * 0.25 if sched == "search" else 0.25)
    t_fixed = mach.fill_s + per_prog * (mach.latency_s * 0.5 + bm * bn * e / sm_bw + lookup)
    t_sched = mach.launch_s + mach.latency_s if sched in ("map", "search") else 0.0
    terms = {
        "prologue_epilogue": t_fixed,
        "schedule": t_sched,
        "launch": mach.launch_s,
        "wave_tail": max(0.0, t_tc - t_even),
        "padding": max(0.0, t_even * (1 - useful / max(1, tiles * tile_flops))),
    }
    detail = {"tiles": tiles, "tiles_per_program": per_prog, "flops": useful, "hbm_bytes": hbm, "mma_eff": mma_eff}
    fixed = _eff(mach, "grouped", "fixed", tag, eff)
    # the persistent program walks its tiles' K loops one after another, `stages - 1` steps of loads in
    # flight (the GEMM's per-program latency term)
    t_lat = per_prog * cdiv(k, bk) * mach.step_latency_s / max(1, st - 1)
    main = {"tensor_core": t_tc, "hbm": t_hbm, "l2": t_l2, "latency": t_lat}
    return _finish("grouped", mach, terms, main, detail, fixed)


# ------------------------------------------------------------------------------------------ public


def predict(
    kernel: str,
    problem: dict[str, Any],
    config: dict[str, Any],
    gpu: str = _gpus.DEFAULT_GPU,
    *,
    efficiency: dict[str, Any] | None = None,
    constants: dict[str, Any] | None = None,
) -> Prediction:
    """Predicted time of one launch of `kernel` with `config` on `problem` (see the module doc).

    problem / config are dicts with the keys `tilewise.advise` uses (the kernels' own config
    field names); `tilewise.advise.problems.normalize` checks them. Raises InputError for an
    unknown kernel or GPU. `efficiency` ({"mma": x, "stream": y, "fixed": z, "misaligned": w}: the GEMM's) and
    `constants` (names of DEFAULTS) override the calibration: benchmarks/sweeps/calibrate.py measures with them.
    """
    if kernel not in KERNELS:
        raise InputError(f"kernel must be one of {', '.join(KERNELS)}, got {shown(kernel)}")
    if kernel in PROBLEM_KEYS:
        _check_problem(kernel, problem)
        _check_config(kernel, config)
    for what, given, keys in (
        ("efficiency", efficiency, ("mma", "stream", "fixed", "misaligned")),
        ("constants", constants, tuple(DEFAULTS)),
    ):
        if given is not None:
            _check_keys(what, given, (), keys)
            for k, v in given.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                    raise InputError(f"{what}[{shown(k)}] must be a finite number >= 0, got {shown(v)}")
    mach = machine(_gpus.get(gpu).key, tuple(sorted((constants or {}).items())))
    return _FAMILIES[kernel](problem, config, mach, efficiency)


# The keys each family reads. Sizes are whole numbers >= 1; a missing one is named, an unknown one refused
# (a misspelt "num_stage" would otherwise be silently replaced by its default).
PROBLEM_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # (required sizes, optional others)
    "gemm": (("m", "n", "k"), ("dtype", "layout")),
    "attention": (("batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim"), ("causal", "dtype")),
    "decode": (("batch", "heads", "kv_heads", "seq_len", "head_dim"), ("dtype", "total_keys")),
    "grouped": (("experts", "rows_per_expert", "n", "k"), ("dtype",)),
}
_POW2_TILE = (16, 1024)  # block sizes: powers of two (tl.arange needs them), 16 (one MMA row slab) to 1024
_CONFIG_INTS: dict[str, tuple[int, int, bool]] = {  # name: (low, high, power of two)
    "block_m": (*_POW2_TILE, True),
    "block_n": (*_POW2_TILE, True),
    "block_k": (*_POW2_TILE, True),
    "num_warps": (1, 32, True),
    "num_stages": (1, 8, False),  # 8 stages of even 16x16x16 bf16 tiles is past any config swept
    "group_m": (1, 256, False),
    "split_k": (1, 256, False),
    "num_splits": (1, 1024, False),
    "programs_per_sm": (1, 32, False),
}
CONFIG_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # (required, optional)
    "gemm": (("block_m", "block_n", "block_k"), ("group_m", "split_k", "num_warps", "num_stages", "persistent",
                                                 "warp_specialize", "stream_b")),
    "attention": (("block_m", "block_n", "num_warps", "num_stages"), ()),
    "decode": (("block_n", "num_warps", "num_stages", "num_splits"), ("merge",)),
    # swap_ab and programs_per_sm are the kernel's own knobs (kernels.grouped_gemm.GroupedConfig): accepted so a
    # kernel's config prices as it is, and priced as the unswapped one-program-per-SM schedule (no term for them)
    "grouped": (("block_m", "block_n", "block_k", "num_stages", "num_warps"), ("schedule", "flatten", "tma",
                                                                  "swap_ab", "programs_per_sm")),
}  # fmt: skip
_SCHEDULES = ("map", "search", "inline")


def _check_keys(what: str, given: object, required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(given, dict):
        raise InputError(f"{what} must be a dict with keys {', '.join(required + optional)}, got {shown(given)}")
    unknown = sorted(str(k) for k in given if k not in required and k not in optional)
    if unknown:
        raise InputError(f"{what} has unknown keys {shown(unknown)}; it takes {', '.join(required + optional)}")
    missing = [k for k in required if k not in given]
    if missing:
        raise InputError(f"{what} needs {', '.join(missing)}, got keys {shown(sorted(map(str, given)))}")
    return given


def _check_problem(kernel: str, problem: object) -> None:
    required, optional = PROBLEM_KEYS[kernel]
    p = _check_keys(f"{kernel} problem", problem, required, optional)
    for k in required:
        whole(k, p[k], minimum=1)
    if "dtype" in p:
        _gpus.dtype_key(p["dtype"])
    if "causal" in p and not isinstance(p["causal"], bool):
        raise InputError(f"causal must be True or False, got {shown(p['causal'])}")
    if "total_keys" in p:  # decode's ragged lengths: the keys of every sequence together, the longest seq_len
        whole("total_keys", p["total_keys"], minimum=1, maximum=p["batch"] * p["seq_len"])


def _check_config(kernel: str, config: object) -> None:
    required, optional = CONFIG_KEYS[kernel]
    c = _check_keys(f"{kernel} config", config, required, optional)
    for k, v in c.items():
        if k in _CONFIG_INTS:
            lo, hi, pow2 = _CONFIG_INTS[k]
            n = whole(k, v, minimum=lo, maximum=hi)
            if pow2 and n & (n - 1):
                raise InputError(f"{k} must be a power of two from {lo} to {hi}, got {n}")
        elif k == "schedule":
            if v not in _SCHEDULES:
                raise InputError(f"schedule must be one of {', '.join(_SCHEDULES)}, got {shown(v)}")
        elif k == "merge":
            if v not in DECODE_MERGES:
                raise InputError(f"merge must be one of {', '.join(DECODE_MERGES)}, got {shown(v)}")
        elif not isinstance(v, bool):
            raise InputError(f"{k} must be True or False, got {shown(v)}")


_FAMILIES = {"gemm": _gemm, "attention": _attention, "decode": _decode, "grouped": _grouped}


def _composed(name: str) -> Callable[..., Prediction]:
    """moe, ffn, sum: composed from the families above (tilewise.model.compose), which it predicts through
    `predict` (passed down: compose sits below this module)."""

    def run(p: dict[str, Any], c: dict[str, Any], mach: _Machine, eff: dict[str, Any] | None = None) -> Prediction:
        return compose.FAMILIES[name](p, c, mach, eff, predict)

    return run


_FAMILIES.update({k: _composed(k) for k in ("moe", "ffn", "sum")})

__all__ = [
    "DECODE_MERGES",
    "KERNELS",
    "Prediction",
    "calibration",
    "decode_merge",
    "decode_merge_s",
    "gemm_gluon",
    "gluon_calibration",
    "machine",
    "overlap",
    "predict",
]
