"""The roofline: the larger of compute time and memory time is the floor on a kernel's time.

`time(gpu, flops, bytes)` is the prediction every benchmark row carries beside its
measurement (`predicted_ms`, `roofline_fraction`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, fraction, positive_int, shown, typed
from tilewise.model import traffic
from tilewise.util import json_safe


@dataclass(frozen=True)
class Roofline:
    flops: float
    bytes: float
    level: str
    dtype: str
    compute_s: float
    memory_s: float
    time_s: float  # max(compute_s, memory_s)
    bound: str  # "compute" or "memory"
    intensity: float  # FLOP per byte of this level
    balance: float  # the machine's FLOP per byte at this level
    attainable_flops: float  # min(peak, intensity x bandwidth)

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


def _amount(name: str, v: object) -> float:
    """A finite number >= 0 as a float (an int too large for a float is refused, not an OverflowError)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise InputError(f"{name} must be a number >= 0, got {shown(v)}")
    try:
        f = float(v)
    except OverflowError:
        raise InputError(f"{name} must be a finite number >= 0, got {shown(v)}") from None
    if not math.isfinite(f) or f < 0:
        raise InputError(f"{name} must be a finite number >= 0, got {shown(v)}")
    return f


def time(
    gpu: str | _gpus.GPU,
    flops: float,
    nbytes: float,
    dtype: str = "bf16",
    level: str = "hbm",
    clock_mhz: float | None = None,
    bandwidth: float | None = None,
) -> Roofline:
    """Roofline time of `flops` on the Tensor Cores and `nbytes` through `level`.

    `bandwidth` overrides the level's figure (e.g. a measured copy bandwidth).
    """
    g = _gpus.get(gpu)
    flops, nbytes = _amount("flops", flops), _amount("bytes", nbytes)
    peak = _gpus.peak_flops(g, dtype, clock_mhz)
    bw = _amount("bandwidth", bandwidth) if bandwidth is not None else _gpus.bandwidth(g, level, clock_mhz)
    if bw <= 0:
        raise InputError(f"bandwidth must be > 0 bytes/s, got {shown(bandwidth)}")
    compute_s = flops / peak
    memory_s = nbytes / bw
    t = max(compute_s, memory_s)
    intensity = flops / nbytes if nbytes else float("inf")
    return Roofline(
        flops=float(flops),
        bytes=float(nbytes),
        level=level,
        dtype=_gpus.dtype_name(dtype),
        compute_s=compute_s,
        memory_s=memory_s,
        time_s=t,
        bound="compute" if compute_s >= memory_s else "memory",
        intensity=intensity,
        balance=peak / bw,
        attainable_flops=min(peak, intensity * bw),
    )


# ------------------------------------------------------------------ per level


@typed
def machine_balance(gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU, dtype: str = "bf16") -> dict[str, float]:
    """FLOP per byte the Tensor Cores need from each level to stay busy: HBM ~295 on an H100 SXM.

    The L2 figure rests on an order-of-magnitude bandwidth (NVIDIA publishes none).
    """
    g = _gpus.get(gpu)
    return {lvl: _gpus.balance(g, lvl, dtype) for lvl in _gpus.LEVELS}


@dataclass(frozen=True)
class LevelRoofline:
    levels: dict[str, Roofline]
    binding: str  # the level (or "compute") that sets the time
    time_s: float
    tensor_utilisation: float  # compute time / time

    def to_dict(self) -> dict[str, Any]:
        return json_safe(
            {
                "levels": {k: v.to_dict() for k, v in self.levels.items()},
                "binding": self.binding,
                "time_s": self.time_s,
                "tensor_utilisation": self.tensor_utilisation,
            }
        )


def time_levels(
    gpu: str | _gpus.GPU,
    flops: float,
    hbm_bytes: float,
    l2_bytes: float | None = None,
    smem_bytes: float | None = None,
    dtype: str = "bf16",
    clock_mhz: float | None = None,
) -> LevelRoofline:
    """Roofline at every level given: the slowest of compute and each level's bytes sets the time."""
    levels = {"hbm": time(gpu, flops, hbm_bytes, dtype, "hbm", clock_mhz)}
    if l2_bytes is not None:
        levels["l2"] = time(gpu, flops, l2_bytes, dtype, "l2", clock_mhz)
    if smem_bytes is not None:
        levels["smem"] = time(gpu, flops, smem_bytes, dtype, "smem", clock_mhz)
    compute_s = levels["hbm"].compute_s
    worst = max(levels, key=lambda k: levels[k].memory_s)
    t = max(compute_s, levels[worst].memory_s)
    binding = "compute" if compute_s >= levels[worst].memory_s else worst
    return LevelRoofline(levels, binding, t, compute_s / t if t else 1.0)


# ------------------------------------------------------------------ L2 reuse
#
# A KV tile is K and V, [N, d] each; a block with M rows of Q does
# 4 x M x N x d FLOPs on its 2 x N x d x 2 bytes: each byte of KV buys M FLOPs, N cancels.
# Against a balance of 989.4 / 3.35 = 295, M = 64 is more than 4x short if every byte comes
# from HBM. But the Q blocks of one head all read the same K/V, so later blocks mostly hit L2:
# HBM sees (1 - hit) of the bytes, the intensity seen by HBM is M / (1 - hit), and reaching the
# compute roof needs hit >= 1 - M / balance: 78% at M = 64.


def _hit(hit_rate: float) -> float:
    return fraction("hit_rate", hit_rate)


@typed
def effective_hbm_bytes(requested_bytes: float, hit_rate: float) -> float:
    """Bytes HBM serves when `hit_rate` of the requested bytes hit in L2."""
    if requested_bytes < 0:
        raise InputError(f"requested_bytes must be >= 0, got {shown(requested_bytes)}")
    return requested_bytes * (1.0 - _hit(hit_rate))


@typed
def hit_rate_for_compute_roof(intensity: float, gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU, dtype: str = "bf16") -> float:
    """L2 hit rate at which FLOPs / (HBM bytes) reaches the HBM balance: max(0, 1 - intensity / balance)."""
    if not intensity > 0:
        raise InputError(f"intensity must be > 0 FLOP/B, got {shown(intensity)}")
    return max(0.0, 1.0 - intensity / _gpus.balance(_gpus.get(gpu), "hbm", dtype))


@typed
def ideal_hit_rate(readers: int) -> float:
    """Hit rate when `readers` blocks read the same bytes and only the first read misses: 1 - 1/readers."""
    return 1.0 - 1.0 / positive_int("readers", readers)


@dataclass(frozen=True)
class L2Reuse:
    intensity: float  # FLOP per requested byte (= M for attention's K/V in 16-bit types)
    hit_rate: float
    hbm_intensity: float  # FLOP per HBM byte: intensity / (1 - hit)
    balance: float  # HBM balance
    l2_balance: float  # order of magnitude
    needed_hit_rate: float  # for the compute roof at HBM
    bound: str  # "compute", "hbm" or "l2"
    tensor_utilisation: float  # min over levels of intensity_at_level / balance_at_level, capped at 1

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def l2_reuse(
    intensity: float,
    hit_rate: float,
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
    dtype: str = "bf16",
    include_l2: bool = False,
) -> L2Reuse:
    """Where a kernel that re-reads a shared operand stands at a given L2 hit rate.

    Only the misses go to HBM. The default stops there (M = 64 needs ~78% hits on an H100 SXM). With `include_l2`,
    every requested byte also counts against L2's bandwidth, an order-of-magnitude figure
    (NVIDIA publishes none), which can bind first.
    """
    if not intensity > 0:
        raise InputError(f"intensity must be > 0 FLOP/B, got {shown(intensity)}")
    h = _hit(hit_rate)
    g = _gpus.get(gpu)
    bal = _gpus.balance(g, "hbm", dtype)
    l2bal = _gpus.balance(g, "l2", dtype)
    hbm_i = intensity / (1.0 - h) if h < 1 else float("inf")
    u_hbm = min(1.0, hbm_i / bal)
    u_l2 = min(1.0, intensity / l2bal) if include_l2 else 1.0
    if u_hbm >= 1 and u_l2 >= 1:
        bound = "compute"
    else:
        bound = "hbm" if u_hbm <= u_l2 else "l2"
    return L2Reuse(
        intensity=float(intensity),
        hit_rate=h,
        hbm_intensity=hbm_i,
        balance=bal,
        l2_balance=l2bal,
        needed_hit_rate=hit_rate_for_compute_roof(intensity, g, dtype),
        bound=bound,
        tensor_utilisation=min(u_hbm, u_l2),
    )


@dataclass(frozen=True)
class KVIntensity:
    block_m: int
    block_n: int
    head_dim: int
    flops: int  # per KV tile: 4 x M x N x d
    kv_bytes: int  # per KV tile: 2 x N x d x element bytes
    intensity: float  # = M for 16-bit types

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def kv_tile_intensity(block_m: int = 64, block_n: int = 128, head_dim: int = 128, dtype: str = "bf16") -> KVIntensity:
    """FLOPs per byte of one K/V tile for a block owning block_m query rows: N and d cancel, M remains."""
    m, n, d = positive_int("block_m", block_m), positive_int("block_n", block_n), positive_int("head_dim", head_dim)

    flops = traffic.attention_tile_flops(m, n, d)
    kv = traffic.kv_tile_bytes(n, d, dtype)
    return KVIntensity(m, n, d, flops, kv, flops / kv)
