"""Pipeline designs on one SM: a small discrete-event simulation (serial, ring buffer, ping-pong).

The Tensor Cores go idle for three reasons: waiting for data, the consumer busy with something
else (softmax), and prologue/epilogue. Three designs, each processing the same work: a CTA owns
2 x 64 rows of Q (two row blocks) and streams `tiles` K/V tiles; per (row block, tile) the
GEMMs take `mma` cycles on the Tensor Cores and the softmax `softmax` cycles on the CUDA cores
and SFUs; loading one tile takes `load` cycles.

(a) "serial" — load-then-compute: one buffer; load a tile, compute both row blocks, then load
    the next. Nothing overlaps.
(b) "ring" — an S-stage ring buffer with full/empty barriers: a producer (one TMA thread) loads
    up to S tiles ahead; it may refill a stage only after the consumer has released it (the
    "empty" barrier), and the consumer waits on each stage's "full" barrier. One consumer
    warpgroup does both row blocks: mma, softmax, mma, softmax. Loads hide; softmax does not.
(c) "pingpong" — warp specialisation: 1 producer + 2 consumer warpgroups, one row block each,
    and the same ring. The consumers take turns on the Tensor Cores (named barriers fix the
    order c0, c1, c0, c1, ...), so one consumer's softmax overlaps the other's GEMM.

The simulation: every operation starts when its inputs are ready and its unit is free; each
unit (the load engine, the Tensor Cores, each consumer's CUDA cores) serves its operations in
program order. The per-tile `mma` time stands for Q.K^T and P.V together (in a real kernel the
softmax sits between them; that moves where the gap falls, not how long it is). Because every
start time is a max of earlier end times plus durations (a max-plus system with fixed orders),
relaxing a constraint never delays anything: more stages are never slower.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, fraction, positive_int, shown, typed
from tilewise.model import traffic
from tilewise.model.latency import hbm_bytes_per_cycle_per_sm
from tilewise.util import json_safe

DESIGNS = ("serial", "ring", "pingpong")
DESIGN_TITLES = {
    "serial": "(a) load then compute",
    "ring": "(b) S-stage ring buffer, 1 producer + 1 consumer",
    "pingpong": "(c) 1 producer + 2 consumer warpgroups, ping-pong",
}
ROW_BLOCKS = 2  # the CTA's two 64-row halves of Q (two consumers in design c)
# Published: the FA3 paper (Shah et al., 2024) gives the H100 SXM5 3.9 TFLOPS of special
# functions = 16 per cycle per SM x 132 SMs x 1.83 GHz (the whitepaper's 16 SFUs per SM).
# TODO(lead): move to tilewise.gpus as a GPU field.
SFU_PER_SM_PER_CYCLE = _gpus.get("h100-sxm").sfu_ops_per_cycle_per_sm  # kept for callers; the figure lives in gpus


@dataclass(frozen=True)
class Event:
    unit: str  # "load", "tc", "wg0", "wg1"
    kind: str  # "load", "mma", "softmax", "epilogue"
    tile: int
    consumer: int  # row block / consumer warpgroup (-1 for loads)
    start: float
    end: float

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@dataclass(frozen=True)
class Timeline:
    design: str
    title: str
    tiles: int
    stages: int
    load: float
    mma: float
    softmax: float
    epilogue: float
    makespan: float
    tc_busy: float
    tensor_utilisation: float  # tc_busy / makespan, never above 1
    steady_cycles_per_tile: float  # the bound the design converges to
    events: tuple[Event, ...] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["events"] = [e.to_dict() for e in self.events]
        return json_safe(d)

    def ascii(self, width: int = 80) -> str:
        """One row per unit; L = load, 0/1 = the Tensor Cores running consumer 0/1, s = softmax, e = epilogue."""
        return render_ascii(self, width)


def _check_times(load: float, mma: float, softmax: float, epilogue: float) -> None:
    for name, v in (("load", load), ("mma", mma), ("softmax", softmax), ("epilogue", epilogue)):
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise InputError(f"{name} must be a time >= 0 (cycles), got {shown(v)}") from None
        if not x >= 0 or x == float("inf"):
            raise InputError(f"{name} must be a finite time >= 0 (cycles), got {shown(v)}")
    if float(mma) <= 0:
        raise InputError(f"mma must be > 0 cycles, got {shown(mma)}")


@typed
def simulate(
    design: str,
    tiles: int = 8,
    load: float = 1000.0,
    mma: float = 1024.0,
    softmax: float = 512.0,
    stages: int = 2,
    epilogue: float = 0.0,
    *,
    lockstep: bool = False,
    split_mma: bool = False,
    load_first: float = 1.0,
) -> Timeline:
    """Simulate one SM running `design` over `tiles` K/V tiles; times in cycles.

    Returns the timeline (events, makespan) and the Tensor Cores' utilisation.

    The keyword options describe how a real kernel runs a design (`KERNEL_STRUCTURE` has the ones
    of tilewise.kernels.attention_gluon; the defaults are the idealised designs, no host or barrier costs):

    * lockstep (serial, ring): the single consumer is two warpgroups of one instruction stream (M = 128
      over 8 warps): Q K^T of both row blocks, then both softmaxes at once (one per warpgroup), then
      P V of both: a tile costs 2 mma + softmax, not 2 (mma + softmax).
    * split_mma (pingpong): a consumer's GEMM block is Q K_j^T then P_{j-1} V_{j-1}; its softmax of
      S_j starts when the first half (Q K_j^T) retires, while the second half still runs.
    * load_first: the fraction of a tile's load that must land before its first GEMM (K has its own
      barrier: 0.5; V must land before P V).
    """
    if design not in DESIGNS:
        raise InputError(f"design must be one of {list(DESIGNS)}, got {shown(design)}")
    tiles = positive_int("tiles", tiles, maximum=100_000)
    stages = positive_int("stages", stages, maximum=64)
    _check_times(load, mma, softmax, epilogue)
    load, mma, softmax, epilogue = float(load), float(mma), float(softmax), float(epilogue)

    f_first = fraction("load_first", load_first)
    if lockstep and design == "pingpong":
        raise InputError("lockstep describes the single consumer of the serial and ring designs, not pingpong")
    if split_mma and design != "pingpong":
        raise InputError("split_mma describes the ping-pong consumers' GEMM blocks; use it with design 'pingpong'")
    ev: list[Event] = []
    load_free = 0.0  # the load engine serves tiles in order
    tc_free = 0.0  # the Tensor Cores serve MMAs in program order
    wg_free = [0.0, 0.0]  # each consumer's own instruction stream
    release: list[float] = []  # when each tile's stage is empty again
    loaded: list[float] = []

    for t in range(tiles):
        # Producer: wait for the stage to be empty (tile t - S released), then load.
        if design == "serial":
            ready = max(load_free, wg_free[0])  # one buffer, reloaded after the compute is done
        else:
            ready = max(load_free, release[t - stages] if t >= stages else 0.0)
        ls, le = ready, ready + load
        ev.append(Event("load", "load", t, -1, ls, le))
        load_free = le
        loaded.append(le)
        first = ls + f_first * load  # K landed

        if lockstep:
            qs = max(first, wg_free[0], tc_free)  # Q K^T of both row blocks, back to back
            for rb in range(ROW_BLOCKS):
                ev.append(Event("tc", "mma", t, rb, qs + rb * mma / 2, qs + (rb + 1) * mma / 2))
            qe = qs + mma
            se = qe + softmax
            if softmax > 0:
                for rb in range(ROW_BLOCKS):
                    ev.append(Event(f"wg{rb}", "softmax", t, rb, qe, se))
            ps = max(se, le)  # P V of both row blocks needs V
            for rb in range(ROW_BLOCKS):
                ev.append(Event("tc", "mma", t, rb, ps + rb * mma / 2, ps + (rb + 1) * mma / 2))
            tc_free = wg_free[0] = ps + mma
            release.append(ps + mma)
            continue

        ends = []
        for rb in range(ROW_BLOCKS):
            wg = rb if design == "pingpong" else 0
            gate = max(first, le - mma / 2) if f_first < 1 else le  # K for Q K^T, V for the P V half
            ms = max(gate, wg_free[wg], tc_free)  # "full" barrier, own stream, Tensor Cores free
            me = ms + mma
            ev.append(Event("tc", "mma", t, rb, ms, me))
            tc_free = me
            ends.append(me)
            ss = ms + mma / 2 if split_mma else me  # split: S_j is ready when Q K_j^T retires
            se = ss + softmax
            if softmax > 0:
                ev.append(Event(f"wg{wg}", "softmax", t, rb, ss, se))
            wg_free[wg] = se
        release.append(max(ends))  # the consumers arrive on the "empty" barrier

    if epilogue > 0:
        for wg in range(2 if design == "pingpong" else 1):
            s = wg_free[wg]
            ev.append(Event(f"wg{wg}", "epilogue", tiles, wg, s, s + epilogue))
            wg_free[wg] = s + epilogue

    makespan = max(max(e.end for e in ev), 0.0)
    busy = sum(e.end - e.start for e in ev if e.unit == "tc")
    steady = steady_cycles_per_tile(
        design, load, mma, softmax, stages, lockstep=lockstep, split_mma=split_mma, load_first=f_first
    )
    return Timeline(
        design=design,
        title=DESIGN_TITLES[design],
        tiles=tiles,
        stages=stages,
        load=load,
        mma=mma,
        softmax=softmax,
        epilogue=epilogue,
        makespan=makespan,
        tc_busy=busy,
        tensor_utilisation=busy / makespan if makespan else 0.0,
        steady_cycles_per_tile=steady,
        events=tuple(sorted(ev, key=lambda e: (e.start, e.unit))),
    )


@typed
def steady_cycles_per_tile(
    design: str,
    load: float,
    mma: float,
    softmax: float,
    stages: int = 2,
    *,
    lockstep: bool = False,
    split_mma: bool = False,
    load_first: float = 1.0,
    row_blocks: int = ROW_BLOCKS,
) -> float:
    """Cycles per tile once the pipeline is full (the closed form the simulation approaches).

    serial: load + 2 (mma + softmax). ring: max(load, 2 (mma + softmax)) with enough stages.
    pingpong: max(load, 2 mma, mma + softmax): the Tensor Cores run back to back when softmax <= mma.
    With `lockstep` (serial, ring): a tile is 2 mma + softmax (serial: + load_first x load, V landing
    under the GEMMs). With `split_mma` (pingpong): max(load, 2 mma, mma / 2 + softmax). `row_blocks`: the
    CTA's 64-row blocks (2; three ping-pong consumers: 3, so max(load, 3 mma, mma + softmax)).
    """
    r = positive_int("row_blocks", row_blocks, maximum=4)
    if lockstep and design in ("serial", "ring"):
        per = r * mma + softmax
        if design == "serial" or stages == 1:  # the next K is requested when P V is done
            return max(load_first * load + mma + softmax, load) + mma
        return max(load, per)
    if split_mma and design == "pingpong":
        per = max(r * mma, mma / 2 + softmax)
        return max(load + r * mma, per) if stages == 1 else max(load, per)
    if design == "serial":
        return load + r * (mma + softmax)
    if design == "ring":
        per = r * (mma + softmax)
        # One stage: the next load starts only when the last MMA of the tile has released it.
        return max(load + r * mma + (r - 1) * softmax, per) if stages == 1 else max(load, per)
    if design == "pingpong":
        per = max(r * mma, mma + softmax)
        return max(load + r * mma, per) if stages == 1 else max(load, per)
    raise InputError(f"design must be one of {list(DESIGNS)}, got {shown(design)}")


@typed
def compare(
    tiles: int = 8,
    load: float = 1000.0,
    mma: float = 1024.0,
    softmax: float = 512.0,
    stages: int = 2,
    epilogue: float = 0.0,
) -> dict[str, Timeline]:
    """All three designs on the same work."""
    return {d: simulate(d, tiles, load, mma, softmax, stages, epilogue) for d in DESIGNS}


_CHARS = {"load": "L", "softmax": "s", "epilogue": "e"}


@typed
def render_ascii(tl: Timeline, width: int = 80) -> str:
    """The timeline as text: one row per unit, one column per makespan / width cycles."""
    width = positive_int("width", width, minimum=10, maximum=400)
    units = ["load", "tc", "wg0"] + (["wg1"] if tl.design == "pingpong" else [])
    names = {"load": "TMA / loads", "tc": "Tensor Cores", "wg0": "WG0 softmax", "wg1": "WG1 softmax"}
    if tl.design == "serial":
        names["load"] = "loads"
    span = tl.makespan or 1.0
    rows = []
    for u in units:
        cells = []
        evs = [e for e in tl.events if e.unit == u]
        for c in range(width):
            mid = (c + 0.5) * span / width
            ch = "."
            for e in evs:
                if e.start <= mid < e.end:
                    ch = str(e.consumer) if e.kind == "mma" else _CHARS[e.kind]
                    break
            cells.append(ch)
        rows.append(f"{names[u]:<13}|{''.join(cells)}|")
    rows.append(f"{'':<13} 0 .. {span:.0f} cycles; Tensor Cores busy {100 * tl.tensor_utilisation:.0f}%")
    return "\n".join(rows)


# ------------------------------------------------------------------ inputs from the model


@dataclass(frozen=True)
class AttentionTileTimes:
    head_dim: int
    block_n: int
    block_m: int
    mma: float  # 4 x 64 x N x d / FLOPs per cycle per SM
    softmax: float  # 64 x N exponentials / SFU per cycle per SM
    load: float  # 2 x N x d x bytes x (1 - hit) / HBM bytes per cycle per SM
    hit_rate: float
    kv_tile_bytes: int
    notes: str

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


@typed
def attention_tile_times(
    head_dim: int = 128,
    block_n: int = 128,
    block_m: int = 64,
    dtype: str = "bf16",
    hit_rate: float = 0.0,
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
) -> AttentionTileTimes:
    """Per-(row block, K/V tile) cycles for `simulate`, from the GPU's published rates.

    d = 128, N = 128 on an H100: the GEMMs take 4 x 64 x 128 x 128 / 4096 = 1024 cycles, the
    exponentials 64 x 128 / 16 = 512 (half the GEMM time: the FA3 paper's point), and the
    64 KB K/V tile from HBM ~4,700 cycles unless L2 serves most of it.
    """
    d = positive_int("head_dim", head_dim, maximum=512)
    n = positive_int("block_n", block_n, maximum=1024)
    m = positive_int("block_m", block_m, maximum=512)
    h = fraction("hit_rate", hit_rate)
    g = _gpus.get(gpu)
    dt = _gpus.dtype_name(dtype)

    mma = traffic.attention_tile_flops(m, n, d) / _gpus.tensor_flops_per_cycle_per_sm(g, dt)
    soft = m * n / g.sfu_ops_per_cycle_per_sm
    kv = traffic.kv_tile_bytes(n, d, dtype)
    load = kv * (1 - h) / hbm_bytes_per_cycle_per_sm(g)
    return AttentionTileTimes(
        head_dim=d,
        block_n=n,
        block_m=m,
        mma=mma,
        softmax=soft,
        load=load,
        hit_rate=h,
        kv_tile_bytes=kv,
        notes="softmax counts the exponentials only (SFU-bound); load counts HBM misses only (L2 assumed not to bind)",
    )


# ------------------------------------------------- the designs as tilewise's Gluon kernels run them

# How tilewise.kernels.attention_gluon runs each design (the `simulate` options): (a) and (b) have one
# consumer of 8 warps (two warpgroups in one instruction stream), (c) two consumers whose GEMM block is
# Q K_j^T + P_{j-1} V_{j-1}; K and V have separate "full" barriers in all three.
KERNEL_STRUCTURE: dict[str, dict[str, Any]] = {
    "serial": {"lockstep": True, "load_first": 0.5},
    "ring": {"lockstep": True, "load_first": 0.5},
    "pingpong": {"split_mma": True, "load_first": 0.5},
}
# Cycles from a warpgroup's Q K^T retiring to its P V being issued, per 64-row block and 128-key tile.
# Measured: design (b) on the H200 (B4 H32 S4096 D128 bf16 non-causal, Nsight Compute, 2026-12-01,
# benchmarks/results/h200/attention_fa3_designs.json): 2.354 ms at 1.7975 GHz over 32 x 4096 / 132 =
# 993 K/V tiles per SM = 4261 cycles per tile, of which the Tensor Cores are busy 2 x 1024 (48.1%
# active, as counted): 4261 - 2048 = 2213. The 64 x 128 exponentials alone are 512 at 16 per cycle; the
# rest is one warpgroup's dependent chain (row max -> exp2 -> row sum with shuffles, O rescale, P
# conversion), the wgmma wait and the partition barrier of each mbarrier arrive. One warpgroup alone
# (pingpong) is no faster than two at once (ring): the chain is latency-bound, not SFU-bound.
SOFTMAX_CYCLES_MEASURED = 2213.0
SOFTMAX_MEASURED_AT: dict[str, Any] = {"gpu": "h200", "block_m": 64, "block_n": 128, "head_dim": 128}


@typed
def kernel_tile_times(
    head_dim: int = 128,
    block_n: int = 128,
    block_m: int = 64,
    dtype: str = "bf16",
    hit_rate: float = 0.0,
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
) -> AttentionTileTimes:
    """Per-(row block, K/V tile) cycles as the Gluon kernels measure, for `simulate` with KERNEL_STRUCTURE.

    Two terms differ from `attention_tile_times` (the idealised inputs from the feed and roofline arithmetic):
    * load: every byte of the K/V tile crosses L2 -> SM at this SM's share of the L2 bandwidth (the
      H200's measured 7.7 TB/s, gpus.py), plus the misses at its HBM share. The idealised term counts
      the HBM misses only: 103 cycles at D 128, N 128, 97% hits, where design (a) exposes ~1,000.
    * softmax: SOFTMAX_CYCLES_MEASURED (scaled by the tile's elements), not the exponentials alone.
    """
    base = attention_tile_times(head_dim, block_n, block_m, dtype, hit_rate, gpu)
    g = _gpus.get(gpu)
    h = base.hit_rate  # checked by attention_tile_times
    l2_per_cycle = g.l2_bytes_per_s / g.sms / (g.tensor_clock_mhz * 1e6)
    load = base.kv_tile_bytes * h / l2_per_cycle + base.kv_tile_bytes * (1 - h) / hbm_bytes_per_cycle_per_sm(g)
    ref = SOFTMAX_MEASURED_AT
    soft = SOFTMAX_CYCLES_MEASURED * (block_m * block_n) / (int(ref["block_m"]) * int(ref["block_n"]))
    return replace(
        base,
        softmax=soft,
        load=load,
        notes=(
            f"load: {base.kv_tile_bytes} B over L2 at {l2_per_cycle:.1f} B/cycle/SM ({_pct(h)} hits) + misses "
            f"at the HBM share; softmax: {SOFTMAX_CYCLES_MEASURED:g} cycles measured at 64 x 128 (H200, design b), "
            f"scaled by elements"
        ),
    )


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


@typed
def predict_kernel_designs(
    seq_q: int = 4096,
    seq_k: int = 4096,
    head_dim: int = 128,
    block_n: int = 128,
    stages: dict[str, int] | None = None,
    dtype: str = "bf16",
    gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU,
) -> dict[str, Timeline]:
    """The three designs of tilewise.kernels.attention_gluon on one SM, non-causal, in steady state.

    Each head's K/V comes from HBM once and from L2 for its other seq_q / 128 query tiles (the kernel
    groups heads to fit L2). `stages`: ring depth per design (default: the kernel's for D 128, 1 / 3 / 3).
    """
    sq = positive_int("seq_q", seq_q, maximum=1 << 24)
    sk = positive_int("seq_k", seq_k, maximum=1 << 24)
    if stages is not None and (not isinstance(stages, dict) or set(stages) - set(DESIGNS)):
        raise InputError(
            f"stages must be a dict of design -> ring depth with designs from {list(DESIGNS)}, got {shown(stages)}"[
                :300
            ]
        )
    st = {"serial": 1, "ring": 3, "pingpong": 3, **(stages or {})}
    hit = 1 - 1 / max(1, -(-sq // 128))
    tt = kernel_tile_times(head_dim, block_n, 64, dtype, hit, gpu)
    tiles = max(1, -(-sk // block_n))
    return {d: simulate(d, tiles, tt.load, tt.mma, tt.softmax, st[d], **KERNEL_STRUCTURE[d]) for d in DESIGNS}


# The ping-pong kernel over its persistent grid (`persistent_forward_ms`). Fitted on the fp16 half of the H200's
# 84-problem sweep (benchmarks/results/h200/attention_sweep.json, 2026-12-01: the 24 fp16 rows at D 128/256,
# median |error| 3.6%) and checked on the 34 bf16 rows at D 128/256 (GQA and 32k/64k contexts included):
# median |error| 3.6%, p90 10.6%.
# * the softmax chain per (64-row block, K/V tile): FORWARD_SOFTMAX_S_SHARE of SOFTMAX_CYCLES_MEASURED scales with
#   the S tile (64 x N: row max, exp2, row sum), the rest with the O accumulator (64 x D: the rescale, the P
#   conversion feeding P V); one measurement at D 128, N 128 cannot split them, D 256 with N 64 does
FORWARD_SOFTMAX_S_SHARE = 0.7
# * a CTA tile's fixed work (Q load, the first Q K^T and the last P V that nothing overlaps, the O store), in
#   steady K/V-tile periods
FORWARD_TILE_FIXED = 3.0
# * the SM clock the kernel sustains (Nsight Compute on it, 2026-12-01: 1.65-1.79 GHz; the fit's value)
FORWARD_CLOCK_MHZ = 1650.0


def persistent_forward_ms(
    busiest_key_tiles: int,
    busiest_tiles: int,
    seq_q: int,
    head_dim: int = 128,
    block_n: int = 128,
    stages: int = 3,
    dtype: str = "bf16",
    gpu: str = "h200",
    consumers: int = ROW_BLOCKS,
) -> float:
    """Milliseconds of the Gluon FA3 forward: its busiest CTA's work at the ping-pong design's steady period.

    `busiest_key_tiles` / `busiest_tiles`: the K/V tiles and the CTA tiles of the CTA with the most work
    under the kernel's schedule (the schedule is the kernel's: `tilewise.kernels.attention_gluon` computes it,
    arithmetic or its longest-first table). Each K/V tile costs the steady period of design (c) with
    `kernel_tile_times` and the softmax chain split between S and O (FORWARD_SOFTMAX_S_SHARE); each CTA
    tile adds FORWARD_TILE_FIXED periods. `consumers`: the ping-pong consumers (64 query rows each), 2 or 3.
    """
    kt = int(busiest_key_tiles)
    nt = int(busiest_tiles)
    if kt < 0 or nt < 0:
        raise InputError(f"busiest_key_tiles and busiest_tiles must be >= 0, got {kt} and {nt}")
    sq = positive_int("seq_q", seq_q, maximum=1 << 26)
    c = positive_int("consumers", consumers, minimum=2, maximum=3)
    hit = 1 - 1 / max(1, -(-sq // (64 * c)))  # a head's K/V from HBM once, from L2 for its other query tiles
    tt = kernel_tile_times(head_dim, block_n, 64, dtype, hit, gpu)
    ref = SOFTMAX_MEASURED_AT
    ref_elems = int(ref["block_m"]) * int(ref["block_n"])
    share = FORWARD_SOFTMAX_S_SHARE
    soft = SOFTMAX_CYCLES_MEASURED * (share * 64 * block_n + (1 - share) * 64 * head_dim) / ref_elems
    period = steady_cycles_per_tile("pingpong", tt.load, tt.mma, soft, stages, row_blocks=c,
                                    **KERNEL_STRUCTURE["pingpong"])  # fmt: skip
    return (kt + nt * FORWARD_TILE_FIXED) * period / (FORWARD_CLOCK_MHZ * 1e6) * 1e3


__all__ = [
    "DESIGNS",
    "FORWARD_CLOCK_MHZ",
    "FORWARD_SOFTMAX_S_SHARE",
    "FORWARD_TILE_FIXED",
    "KERNEL_STRUCTURE",
    "SFU_PER_SM_PER_CYCLE",
    "SOFTMAX_CYCLES_MEASURED",
    "AttentionTileTimes",
    "Event",
    "Timeline",
    "attention_tile_times",
    "compare",
    "kernel_tile_times",
    "persistent_forward_ms",
    "predict_kernel_designs",
    "render_ascii",
    "simulate",
    "steady_cycles_per_tile",
]
