"""Latency hiding: Little's law, capped by what occupancy lets an SM hold.

An SM on Hopper keeps up to 64 warps resident but only about 4 issue per cycle
(one per partition's scheduler); a stalled warp is simply skipped, so enough resident warps
hide latency, and past that point more occupancy does nothing.

Little's law: work in flight = throughput x latency. To issue every cycle while each
instruction waits `latency` cycles for its input, a scheduler needs latency x issue rate
independent instructions in flight; a warp supplies `ilp` of them, so the SM needs
4 x ceil(latency x rate / ilp) warps. For memory: to stream HBM's share of one SM
(3.35 TB/s / 132 SMs / 1.83 GHz = 13.9 B/cycle on an H100 SXM) through a latency of ~600
cycles, 8.3 KB must be in flight per SM: 17 warps each with one 16-byte load per thread.
Occupancy (`tilewise.model.occupancy`) caps the resident warps; the hidden fraction is
min(1, supplied / needed).

Hopper's other way (one block per SM, as FA3 and CUTLASS run): asynchronous TMA copies keep
`stages` tiles in flight from a single thread, so the bytes in flight come from the ring
buffer, not from warps (`async_in_flight`).

Latencies are order-of-magnitude model figures (NVIDIA publishes none); pass your own.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, number, positive_int, shown, typed
from tilewise.model.occupancy import occupancy
from tilewise.util import cdiv, json_safe

# Model figures (order of magnitude, not published): cycles from issue to use.
LATENCY_CYCLES = {"hbm": 600, "l2": 250, "smem": 30, "fma": 4, "mufu": 20}


@typed
def littles_law(latency: float, throughput: float) -> float:
    """Work in flight needed to sustain `throughput` (per cycle) through `latency` (cycles)."""
    if latency < 0 or throughput < 0:
        raise InputError(
            f"latency and throughput must be >= 0, got latency={shown(latency)}, throughput={shown(throughput)}"
        )
    work = float(latency) * float(throughput)
    if not math.isfinite(work):
        raise InputError(f"latency x throughput must be a finite number, got {shown(latency)} x {shown(throughput)}")
    return work


@typed
def hbm_bytes_per_cycle_per_sm(gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU, clock_mhz: float | None = None) -> float:
    """One SM's share of HBM bandwidth per SM cycle (HBM does not follow the SM clock)."""
    g = _gpus.get(gpu)
    clock = g.tensor_clock_mhz if clock_mhz is None else number("clock_mhz", clock_mhz, low=0.0, low_open=True)
    return g.hbm_bytes_per_s / g.sms / (clock * 1e6)


@dataclass(frozen=True)
class LatencyHiding:
    kind: str  # "issue" or "memory"
    latency_cycles: float
    throughput_per_cycle: float  # per SM: instructions or bytes
    in_flight_needed: float  # Little's law
    per_warp: float  # what one warp keeps in flight
    warps_needed: int
    resident_warps: int  # from occupancy (or the SM's maximum without a configuration)
    max_warps: int
    hidden_fraction: float  # min(1, resident / needed): share of the throughput reached
    limiter: str  # occupancy's binding limit, or "none"
    occupancy: dict[str, Any] | None
    loads_needed: int = 0  # memory: thread-level loads in flight (in_flight_needed / bytes per load)

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


def _resident(
    g: _gpus.GPU, threads: int | None, registers: int | None, smem: int | None
) -> tuple[int, str, dict[str, Any] | None]:
    if threads is None:
        return g.max_warps_per_sm, "none", None
    occ = occupancy(g, threads, registers if registers is not None else 32, 0, smem or 0)
    return occ.warps_per_sm, occ.limiter, occ.to_dict()


@typed
def warps_to_hide_issue(
    latency_cycles: float = LATENCY_CYCLES["fma"],
    issue_per_cycle: float = 1.0,
    ilp: int = 1,
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
    threads: int | None = None,
    registers: int | None = None,
    smem: int = 0,
) -> LatencyHiding:
    """Warps an SM needs so each of its schedulers issues `issue_per_cycle` despite `latency_cycles`.

    Per scheduler: ceil(latency x rate / ilp) warps; the SM has one scheduler per partition (4).
    With `threads` (and `registers`, `smem`) the resident warps come from occupancy.
    """
    g = _gpus.get(gpu)
    ilp = positive_int("ilp", ilp)
    if not 0 < issue_per_cycle <= 1:
        raise InputError(f"issue_per_cycle must be in (0, 1] per scheduler, got {shown(issue_per_cycle)}")
    per_sched = littles_law(latency_cycles, issue_per_cycle)
    need = g.sub_partitions * max(1, math.ceil(round(per_sched / ilp, 9)))
    resident, limiter, occ = _resident(g, threads, registers, smem)
    return LatencyHiding(
        kind="issue",
        latency_cycles=float(latency_cycles),
        throughput_per_cycle=issue_per_cycle * g.sub_partitions,
        in_flight_needed=per_sched * g.sub_partitions,
        per_warp=float(ilp),
        warps_needed=need,
        resident_warps=resident,
        max_warps=g.max_warps_per_sm,
        hidden_fraction=min(1.0, resident / need),
        limiter=limiter,
        occupancy=occ,
    )


@typed
def warps_to_hide_memory(
    latency_cycles: float = LATENCY_CYCLES["hbm"],
    bytes_per_thread_load: int = 16,
    loads_in_flight_per_thread: int = 1,
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
    threads: int | None = None,
    registers: int | None = None,
    smem: int = 0,
    clock_mhz: float | None = None,
) -> LatencyHiding:
    """Warps an SM needs to keep its share of HBM bandwidth busy through `latency_cycles`.

    H100 SXM: 13.9 B/cycle x 600 cycles = 8.3 KB in flight per SM; one warp with one 16-byte
    load per thread holds 512 B, so 17 warps (27% occupancy) suffice; with 4 B loads, 65 -- more
    than the 64 an SM can hold.
    """
    g = _gpus.get(gpu)
    b = positive_int("bytes_per_thread_load", bytes_per_thread_load, maximum=16)
    ilp = positive_int("loads_in_flight_per_thread", loads_in_flight_per_thread, maximum=64)
    rate = hbm_bytes_per_cycle_per_sm(g, clock_mhz)
    need_bytes = littles_law(latency_cycles, rate)
    per_warp = g.warp_size * b * ilp
    need = max(1, cdiv(int(need_bytes), per_warp))
    resident, limiter, occ = _resident(g, threads, registers, smem)
    return LatencyHiding(
        kind="memory",
        latency_cycles=float(latency_cycles),
        throughput_per_cycle=rate,
        in_flight_needed=need_bytes,
        per_warp=float(per_warp),
        warps_needed=need,
        resident_warps=resident,
        max_warps=g.max_warps_per_sm,
        hidden_fraction=min(1.0, resident * per_warp / need_bytes) if need_bytes else 1.0,
        limiter=limiter,
        occupancy=occ,
        loads_needed=math.ceil(need_bytes / b),
    )


@typed
def async_in_flight(
    stages: int,
    stage_bytes: int,
    latency_cycles: float = LATENCY_CYCLES["hbm"],
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
) -> dict[str, Any]:
    """Bytes a TMA ring buffer keeps in flight (stages - 1 tiles ahead of the consumer) vs what HBM needs."""
    g = _gpus.get(gpu)
    stages = positive_int("stages", stages)
    stage_bytes = positive_int("stage_bytes", stage_bytes)
    need = littles_law(latency_cycles, hbm_bytes_per_cycle_per_sm(g))
    ahead = max(stages - 1, 0) * stage_bytes
    return {
        "stages": stages,
        "stage_bytes": stage_bytes,
        "bytes_in_flight": ahead,
        "bytes_needed": need,
        "covers": ahead >= need,
        "hidden_fraction": min(1.0, ahead / need) if need else 1.0,
    }


__all__ = [
    "LATENCY_CYCLES",
    "LatencyHiding",
    "async_in_flight",
    "hbm_bytes_per_cycle_per_sm",
    "littles_law",
    "warps_to_hide_issue",
    "warps_to_hide_memory",
]
