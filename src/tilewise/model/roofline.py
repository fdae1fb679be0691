"""The roofline: the larger of compute time and memory time is the floor on a kernel's time.

`time(gpu, flops, bytes)` is the prediction every benchmark row carries beside its
measurement (`predicted_ms`, `roofline_fraction`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tilewise import gpus as _gpus
from tilewise.errors import InputError


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

    def to_dict(self) -> dict:
        return asdict(self)


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
    if flops < 0 or nbytes < 0:
        raise InputError(f"flops and bytes must be >= 0, got flops={flops!r}, bytes={nbytes!r}")
    peak = _gpus.peak_flops(g, dtype, clock_mhz)
    bw = bandwidth if bandwidth is not None else _gpus.bandwidth(g, level, clock_mhz)
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
