"""The explorer's JSON endpoints: one function per panel, each a thin call into `tilewise.model`.

No formula lives here. A panel function reads its inputs (`Params`), calls the model
functions that own the rule, and returns what the page draws: numbers, and for the
animations the schedule or the steps to play. The page never computes a figure.

A panel is listed by `available()` only when the model modules it needs import, so the
explorer grows as the model does and never shows a stub.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass

from tilewise import gpus as _gpus
from tilewise.errors import InputError
from tilewise.web.params import Params

# Drawing limits: the page draws every block, tile or step it is given.
MAX_DRAWN_BLOCKS = 4096
MAX_DRAWN_TILES = 2048
MAX_TILING_STEPS = 4096


@dataclass(frozen=True)
class Panel:
    id: str
    title: str
    func: Callable[[Params], dict]
    params: frozenset[str]
    needs: tuple[str, ...]  # model modules (and attributes) this panel calls: "module:attr"


PANELS: dict[str, Panel] = {}


def panel(id: str, title: str, params: tuple[str, ...], needs: tuple[str, ...] = ()):
    def wrap(func: Callable[[Params], dict]) -> Callable[[Params], dict]:
        PANELS[id] = Panel(id, title, func, frozenset(params), needs)
        return func

    return wrap


def _importable(spec: str) -> bool:
    mod, _, attr = spec.partition(":")
    try:
        m = importlib.import_module(mod)
    except Exception:  # a model module mid-edit by its owner must not break the explorer
        return False
    return not attr or hasattr(m, attr)


# Page order: the tips document's order, then the GEMM article's, then MoE.
ORDER = (
    "hierarchy",
    "access",
    "divergence",
    "occupancy",
    "latency",
    "tiling",
    "tensorcore",
    "registers",
    "l2",
    "pipeline",
    "decode",
    "moe",
)


def available() -> list[Panel]:
    """Panels whose model functions exist, in page order."""
    ps = [p for p in PANELS.values() if all(_importable(n) for n in p.needs)]
    return sorted(ps, key=lambda p: ORDER.index(p.id) if p.id in ORDER else len(ORDER))


def call(panel_id: str, query) -> dict:
    """Run one endpoint. Raises KeyError for an unknown or unavailable panel, InputError for bad input."""
    p = PANELS[panel_id]
    if p not in available():
        raise KeyError(panel_id)
    return clean(p.func(Params(query, p.params)))


def clean(v):
    """JSON-safe copy: inf and nan become None, tuples lists, objects with to_dict() their dicts."""
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    if hasattr(v, "to_dict"):
        return clean(v.to_dict())
    return str(v)


def _gpu_summary(g: _gpus.GPU) -> dict:
    return {"key": g.key, "name": g.name, "arch": g.arch, "sms": g.sms}


# ------------------------------------------------------------------------------------------ gpus


def gpus_list() -> dict:
    out = []
    for g in _gpus.list():
        d = _gpu_summary(g)
        d["peak_tflops_bf16"] = _gpus.peak_flops(g, "bf16") / 1e12 if "bf16" in g.dense_macs_per_tc_per_cycle else None
        d["hbm_tb_s"] = _gpus.bandwidth(g, "hbm") / 1e12
        d["smem_per_block_optin"] = g.smem_per_block_optin
        d["max_threads_per_block"] = g.max_threads_per_block
        d["wgmma"] = g.wgmma
        d["balance_bf16"] = _gpus.balance(g, "hbm", "bf16") if "bf16" in g.dense_macs_per_tc_per_cycle else None
        out.append(d)
    return {"gpus": out, "default": "h100-sxm"}


# ------------------------------------------------------------------------------------- hierarchy


@panel(
    "hierarchy",
    "Grid → blocks → SMs → warps",
    ("gpu", "m", "n", "k", "tile_m", "tile_n", "threads"),
    needs=("tilewise.explain.gemm:explain", "tilewise.model.waves:persistent_tiles"),
)
def hierarchy(p: Params) -> dict:
    """The GEMM article's grid laid over the SMs, wave by wave, and one block cut into warps.

    Counts come from `explain.gemm.explain` (grid, warps, tiles, K steps) and
    `model.waves.grid_waves`; which SM runs which block comes from
    `model.waves.persistent_tiles`: with equal blocks, the scheduler's "whichever SM has
    room gets the next block" hands block b to slot b mod slots in round b div slots,
    the same stride a persistent program walks.
    """
    from tilewise.explain.gemm import explain
    from tilewise.model import waves

    g = p.gpu()
    m = p.int("m", 64, 1, 1 << 20)
    n = p.int("n", 24576, 1, 1 << 20)
    k = p.int("k", 8192, 1, 1 << 20)
    tile_m = p.int("tile_m", 64, 16, 256)
    tile_n = p.int("tile_n", 128, 16, 256)
    threads = p.int("threads", 256, 32, g.max_threads_per_block)
    rep = explain(m=m, n=n, k=k, gpu=g, tile=(tile_m, tile_n), threads=threads)
    tiling, block, w = rep["tiling"], rep["block"], rep["waves"]
    blocks = tiling["blocks"]
    if blocks > MAX_DRAWN_BLOCKS:
        grid_m, grid_n = tiling["grid"]
        raise InputError(
            f"the grid must have at most {MAX_DRAWN_BLOCKS} blocks to be drawn, got {grid_m} x {grid_n} = "
            f"{blocks} (use larger tiles or a smaller problem)"
        )
    wv = waves.grid_waves(blocks, g.sms, 1)
    # schedule[s] = the blocks SM s runs, in order; block b's wave is its index there.
    schedule = [waves.persistent_tiles(blocks, wv.slots, s) for s in range(wv.slots)]
    wave_of = [0] * blocks
    sm_of = [0] * blocks
    for s, bs in enumerate(schedule):
        for i, b in enumerate(bs):
            wave_of[b], sm_of[b] = i, s
    busy_per_wave = [sum(1 for bs in schedule if len(bs) > r) for r in range(wv.rounds)]
    return {
        "gpu": _gpu_summary(g),
        "problem": {"m": m, "n": n, "k": k, "tile": [tile_m, tile_n], "threads": threads},
        "grid": tiling["grid"],
        "blocks": blocks,
        "waves": wv.to_dict(),
        "schedule": schedule,
        "wave_of_block": wave_of,
        "sm_of_block": sm_of,
        "busy_sms_per_wave": busy_per_wave,
        "warps_per_block": block["warps"],
        "warp_size": g.warp_size,
        "threads": block["threads"],
        "a_tile_bytes": block["a_tile_bytes"],
        "b_tile_bytes": block["b_tile_bytes"],
        "k_steps": block["k_steps"],
        "sub_partitions": g.sub_partitions,
        "explain": {s.key: s.lines for s in rep.steps if s.key in ("tiling", "waves", "block", "mma", "roofline")},
        "tail_efficiency": w["tail_efficiency"],
        "mma": rep["mma"],
        "memory": [
            {
                "level": "HBM",
                "capacity_bytes": g.memory_bytes,
                "bytes_per_s": _gpus.bandwidth(g, "hbm"),
                "balance": _gpus.balance(g, "hbm", "bf16"),
                "holds": "all the weights and activations",
            },
            {
                "level": "L2",
                "capacity_bytes": g.l2_bytes,
                "bytes_per_s": _gpus.bandwidth(g, "l2"),
                "balance": _gpus.balance(g, "l2", "bf16"),
                "holds": "re-read tiles (a model bandwidth: none is published)",
            },
            {
                "level": "shared memory (SRAM)",
                "capacity_bytes": g.smem_per_sm,
                "per_sm": True,
                "bytes_per_s": _gpus.bandwidth(g, "smem"),
                "balance": _gpus.balance(g, "smem", "bf16"),
                "holds": "the A and B tiles of a K step",
            },
            {
                "level": "registers",
                "capacity_bytes": g.regs_per_sm * 4,
                "per_sm": True,
                "bytes_per_s": None,
                "balance": None,
                "holds": "fragments and the accumulator",
            },
        ],
        "peak_flops_bf16": _gpus.peak_flops(g, "bf16"),
    }


# ------------------------------------------------------------------------------------- occupancy


@panel(
    "occupancy",
    "Occupancy: four limits, the tightest wins",
    ("gpu", "threads", "registers", "smem", "carveout", "barriers"),
    needs=("tilewise.model.occupancy:occupancy", "tilewise.model.occupancy:what_if"),
)
def occupancy_panel(p: Params) -> dict:
    """`model.occupancy.occupancy` for one configuration, and the calculator's what-if curves."""
    from tilewise.model.occupancy import occupancy, what_if

    g = p.gpu()
    threads = p.int("threads", 256, 1, g.max_threads_per_block)
    registers = p.int("registers", 64, 0, g.max_regs_per_thread)
    smem = p.size("smem", 0, 0, g.smem_per_block_optin)
    carveout = p.int("carveout", -1, -1, 100)
    barriers = p.int("barriers", 1, 0, g.max_barriers_per_block)
    kw = dict(
        gpu=g,
        threads=threads,
        registers=registers,
        static_smem=0,
        dynamic_smem=smem,
        carveout=None if carveout < 0 else carveout,
        barriers=barriers,
    )
    o = occupancy(**kw)
    return {
        "gpu": _gpu_summary(g),
        "result": o.to_dict(),
        "hardware": {
            "max_warps_per_sm": g.max_warps_per_sm,
            "max_blocks_per_sm": g.max_blocks_per_sm,
            "regs_per_sm": g.regs_per_sm,
            "max_regs_per_thread": g.max_regs_per_thread,
            "smem_per_sm": g.smem_per_sm,
            "smem_per_block_optin": g.smem_per_block_optin,
            "smem_per_block_default": g.smem_per_block_default,
            "max_threads_per_block": g.max_threads_per_block,
        },
        "what_if": what_if(kw),
    }


# ---------------------------------------------------------------------------------- GEMM tiling


@panel(
    "tiling",
    "Output-stationary tiling, step by step",
    ("m", "n", "k", "block_m", "block_n", "block_k"),
    needs=("tilewise.model.traffic:gemm_tiled_hbm_bytes",),
)
def tiling(p: Params) -> dict:
    """The GEMM article's animation: the Triton kernel's loops played one step at a time.

    Program (pid_m, pid_n) walks K in BLOCK_K steps, loading one A tile and one B tile per
    step into registers and accumulating; only after the K loop does it store its C tile.
    The steps are the kernel's loop order; their element counts are checked against
    `model.traffic.gemm_tiled_hbm_bytes` (and compared with the naive kernel's).
    """
    from tilewise.model import traffic

    m = p.int("m", 8, 1, 32)
    n = p.int("n", 8, 1, 32)
    k = p.int("k", 8, 1, 32)
    bm = p.int("block_m", 2, 1, 16)
    bn = p.int("block_n", 2, 1, 16)
    bk = p.int("block_k", 2, 1, 16)
    grid_m, grid_n, k_steps = -(-m // bm), -(-n // bn), -(-k // bk)
    if grid_m * grid_n * (k_steps + 1) > MAX_TILING_STEPS:
        raise InputError(f"the animation must have at most {MAX_TILING_STEPS} steps; use larger blocks")
    steps = []
    loaded_a = loaded_b = written_c = 0
    for pid_m in range(grid_m):
        for pid_n in range(grid_n):
            rows = [pid_m * bm, min(m, (pid_m + 1) * bm)]  # offs_m, masked at the edge
            cols = [pid_n * bn, min(n, (pid_n + 1) * bn)]
            for step, k0 in enumerate(range(0, k, bk)):
                ks = [k0, min(k, k0 + bk)]
                loaded_a += (rows[1] - rows[0]) * (ks[1] - ks[0])
                loaded_b += (ks[1] - ks[0]) * (cols[1] - cols[0])
                steps.append(
                    {
                        "op": "mma",
                        "pid": [pid_m, pid_n],
                        "k_step": step,
                        "rows": rows,
                        "cols": cols,
                        "k": ks,
                        "acc_k": ks[1],  # how much of K the accumulator holds after this step
                        "loaded_a": loaded_a,
                        "loaded_b": loaded_b,
                        "written_c": written_c,
                    }
                )
            written_c += (rows[1] - rows[0]) * (cols[1] - cols[0])
            steps.append(
                {
                    "op": "store",
                    "pid": [pid_m, pid_n],
                    "rows": rows,
                    "cols": cols,
                    "acc_k": k,
                    "loaded_a": loaded_a,
                    "loaded_b": loaded_b,
                    "written_c": written_c,
                }
            )
    # Elements, not bytes: the model's byte counts for a 1-byte dtype.
    tiled = traffic.gemm_tiled_hbm_elements(m, n, k, bm, bn)
    naive = traffic.gemm_naive_hbm_elements(m, n, k)
    if tiled != loaded_a + loaded_b + written_c:  # the steps must be the model's traffic
        raise AssertionError(f"tiling steps move {loaded_a + loaded_b + written_c} elements, the model {tiled}")
    return {
        "problem": {"m": m, "n": n, "k": k, "block_m": bm, "block_n": bn, "block_k": bk},
        "grid": [grid_m, grid_n],
        "k_steps": k_steps,
        "steps": steps,
        "totals": {
            "loaded_a": loaded_a,
            "loaded_b": loaded_b,
            "written_c": written_c,
            "tiled_elements": tiled,
            "naive_elements": naive,
            "reduction": naive / tiled,
            "c_writes_if_accumulating_in_memory": m * n * k_steps,
        },
        "flops": traffic.gemm_flops(m, n, k),
    }


# -------------------------------------------------------------------------------- decode padding


DECODE_BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


@panel(
    "decode",
    "Decode: fragment padding and the roofline",
    ("gpu", "batch", "n", "k", "dtype"),
    needs=("tilewise.model.decode:decode_gemm_point", "tilewise.model.decode:batch_for_compute_bound"),
)
def decode_panel(p: Params) -> dict:
    """`model.decode.decode_gemm_point` (fragment fill for mma and wgmma, the decode GEMM
    C[batch, n] = A[batch, k] x W[k, n] on the roofline) at the chosen batch and a series."""
    from tilewise.model import decode, roofline

    g = p.gpu()
    batch = p.int("batch", 1, 1, 4096)
    n = p.int("n", 24576, 1, 1 << 17)
    k = p.int("k", 8192, 1, 1 << 17)
    dtype = p.choice("dtype", "bf16", [d for d in ("bf16", "fp16", "fp8") if d in g.dense_macs_per_tc_per_cycle])

    def point(b: int) -> dict:
        d = decode.decode_gemm_point(b, k, n, dtype, g).to_dict()
        d["attainable_flops"] = d["achieved_tflops"] * 1e12  # unit change only
        return d

    fills = {}
    for name in ("mma", "wgmma"):
        gran = decode.mma_granularity(name)
        f = decode.fragment_fill(batch, gran)
        padded = round(batch / f)
        fills[name] = {"rows": gran, "fill": f, "padded_rows": padded, "fragments": padded // gran}
    cur = point(batch)
    series = [point(b) for b in DECODE_BATCHES]
    # The roof itself, drawn through points the roofline model computes.
    lo, hi = 0.25, 4 * max(cur["balance"], DECODE_BATCHES[-1])
    roof = []
    for intensity in (lo, cur["balance"], hi):
        r = roofline.time(g, intensity * 1e9, 1e9, dtype)
        roof.append({"intensity": intensity, "attainable_flops": r.attainable_flops})
    return {
        "gpu": _gpu_summary(g),
        "problem": {"batch": batch, "n": n, "k": k, "dtype": dtype},
        "fragments": fills,
        "current": cur,
        "series": series,
        "roof": roof,
        "batch_for_compute_bound": decode.batch_for_compute_bound(k, n, dtype, g),
    }


# ---------------------------------------------------------------------------- MoE tile scheduler


@panel(
    "moe",
    "MoE: the persistent grouped GEMM's tile scheduler",
    ("gpu", "rows", "block_m", "n", "block_n", "programs", "k"),
    needs=(
        "tilewise.model.waves:grouped_schedule",
        "tilewise.model.waves:tile_owner",
        "tilewise.model.waves:local_tile_coords",
        "tilewise.model.waves:persistent_tiles",
    ),
)
def moe(p: Params) -> dict:
    """Per-expert tiles, their prefix sum, tile -> (expert, local tile) by binary search, and
    which persistent program takes which tile: `model.waves`'s grouped-GEMM functions."""
    from tilewise.model import waves

    g = p.gpu()
    rows = p.int_list("rows", [40, 0, 130, 64, 7, 200, 90, 16], 0, 1 << 16, 64)
    block_m = p.int("block_m", 64, 16, 256)
    n = p.int("n", 512, 1, 1 << 16)
    block_n = p.int("block_n", 128, 16, 256)
    programs = p.int("programs", g.sms, 1, 1024)
    k = p.int("k", 2048, 16, 1 << 16)
    s = waves.grouped_schedule(rows, block_m, n, block_n)
    if s.total_tiles > MAX_DRAWN_TILES:
        raise InputError(
            f"the schedule must have at most {MAX_DRAWN_TILES} tiles to be drawn, got {s.total_tiles} "
            "(fewer rows, larger block_m or block_n)"
        )
    tiles = []
    for prog in range(min(programs, s.total_tiles)):
        for rnd, t in enumerate(waves.persistent_tiles(s.total_tiles, programs, prog)):
            e, local = waves.tile_owner(s.prefix, t)
            mt, nt = waves.local_tile_coords(s, e, local)
            tiles.append(
                {"tile": t, "expert": e, "local": local, "m_tile": mt, "n_tile": nt, "program": prog, "round": rnd}
            )
    tiles.sort(key=lambda d: d["tile"])
    busy = min(programs, s.total_tiles)
    rounds = max((d["round"] for d in tiles), default=-1) + 1
    cost = None
    if s.total_tiles and hasattr(waves, "grouped_gemm_cost"):
        c = waves.grouped_gemm_cost(rows, k, n, block_m, block_n, 64, "bf16", g)
        cost = {
            "k": k,
            "tile": c.tile.to_dict(),
            "m_fill": c.m_fill,
            "wgmma_fill": c.wgmma_fill,
            "cycles_persistent": c.cycles_persistent,
            "cycles_per_launch": c.cycles_per_launch,
            "overhead_share_persistent": c.overhead_share_persistent,
            "overhead_share_per_launch": c.overhead_share_per_launch,
            "persistent": c.persistent.to_dict(),
        }
    return {
        "gpu": _gpu_summary(g),
        "schedule": s.to_dict(),
        "cost": cost,
        "programs": programs,
        "busy_programs": busy,
        "idle_programs": programs - busy,
        "rounds": rounds,
        "tiles": tiles,
    }


# ------------------------------------------------------------------------- Tensor-Core feeding


def _hopper(p: Params) -> _gpus.GPU:
    g = p.gpu()
    if not g.wgmma:
        hopper = ", ".join(x.key for x in _gpus.list() if x.wgmma)
        raise InputError(f"gpu must have wgmma (Hopper: {hopper}) for this panel, got {g.key}")
    return g


@panel(
    "tensorcore",
    "Feeding the Tensor Cores: drag N",
    ("gpu", "n", "dtype"),
    needs=("tilewise.model.tensorcore:smem_feed", "tilewise.model.tensorcore:feed_table"),
)
def tensorcore_panel(p: Params) -> dict:
    """`model.tensorcore.smem_feed` (SS and RS) at one N, and `feed_table` over every legal N."""
    from tilewise.model import tensorcore

    g = _hopper(p)
    n = p.int("n", 64, tensorcore.WGMMA_N_MIN, tensorcore.WGMMA_N_MAX)
    dtype = p.choice("dtype", "bf16", ("bf16", "fp16", "fp8"))
    tensorcore.check_n(n)
    ns = list(range(tensorcore.WGMMA_N_MIN, tensorcore.WGMMA_N_MAX + 1, tensorcore.WGMMA_N_STEP))
    return {
        "gpu": _gpu_summary(g),
        "n": n,
        "dtype": dtype,
        "wgmma": tensorcore.wgmma(n, dtype, g.key).to_dict(),
        "ss": tensorcore.smem_feed(n, dtype, "SS", g.key).to_dict(),
        "rs": tensorcore.smem_feed(n, dtype, "RS", g.key).to_dict(),
        "sm": tensorcore.sm_flops_per_cycle(g.key, dtype),
        "table": {
            "ss": [f.to_dict() for f in tensorcore.feed_table(ns, dtype, "SS", g.key)],
            "rs": [f.to_dict() for f in tensorcore.feed_table(ns, dtype, "RS", g.key)],
        },
        "modelled": tensorcore.MODELLED,
    }


@panel(
    "registers",
    "Registers and shared memory: N's upper bound",
    ("gpu", "n", "head_dim", "stages", "dtype"),
    needs=("tilewise.model.tensorcore:attention_tile_budget", "tilewise.model.tensorcore:setmaxnreg_split"),
)
def registers_panel(p: Params) -> dict:
    """`model.tensorcore.attention_tile_budget` for one consumer warpgroup's tile, the register
    total at every N, and `setmaxnreg_split` for 1 producer + 2 consumers."""
    from tilewise.model import tensorcore

    g = _hopper(p)
    n = p.int("n", 128, 16, 256)
    if n % 16:
        raise InputError(f"n must be a multiple of 16 from 16 to 256, got {n}")
    head_dim = p.choice("head_dim", "128", ("64", "96", "128", "192", "256"))
    stages = p.int("stages", 2, 1, 8)
    dtype = p.choice("dtype", "bf16", ("bf16", "fp16"))
    d = int(head_dim)
    budget = tensorcore.attention_tile_budget(d, n, 64, dtype, stages, g.key)
    curve = [tensorcore.register_budget(d, nn, 64, dtype, g.key).to_dict() for nn in range(16, 257, 16)]
    return {
        "gpu": _gpu_summary(g),
        "budget": budget,
        "curve": curve,
        "setmaxnreg": tensorcore.setmaxnreg_split(1, 2, 24, g.key),
        "address_registers_modelled": tensorcore.ADDRESS_REGISTERS,
    }


# ------------------------------------------------------------------------------ L2 and HBM


@panel(
    "l2",
    "L2 and HBM: M, hit rate and the balance point",
    ("gpu", "m", "hit", "head_dim", "n"),
    needs=("tilewise.model.roofline:l2_reuse", "tilewise.model.roofline:kv_tile_intensity"),
)
def l2_panel(p: Params) -> dict:
    """`model.roofline.kv_tile_intensity` (N and d cancel, M remains) and `l2_reuse` at a hit
    rate, with utilisation over the hit rate and the needed hit rate over M."""
    from tilewise.model import roofline

    g = p.gpu()
    m = p.int("m", 64, 1, 1024)
    hit = p.float("hit", 0.8, 0.0, 0.99)
    d = p.int("head_dim", 128, 16, 512)
    n = p.int("n", 128, 16, 1024)
    kv = roofline.kv_tile_intensity(m, n, d, "bf16")
    cur = roofline.l2_reuse(kv.intensity, hit, g, "bf16")
    hits = [i / 100 for i in range(0, 100)]
    over_hit = [{"hit": h, **roofline.l2_reuse(kv.intensity, h, g, "bf16").to_dict()} for h in hits]
    ms = [8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512]
    over_m = []
    for mm in ms:
        i = roofline.kv_tile_intensity(mm, n, d, "bf16").intensity
        over_m.append({"m": mm, "intensity": i, "needed_hit_rate": roofline.hit_rate_for_compute_roof(i, g, "bf16")})
    return {
        "gpu": _gpu_summary(g),
        "kv": kv.to_dict(),
        "current": cur.to_dict(),
        "over_hit": over_hit,
        "over_m": over_m,
    }


# ----------------------------------------------------------------------------- latency hiding


@panel(
    "latency",
    "Latency hiding: try it",
    ("gpu", "kind", "latency", "width", "ilp", "threads", "registers", "stages", "stage_kb"),
    needs=(
        "tilewise.model.latency:warps_to_hide_memory",
        "tilewise.model.latency:warps_to_hide_issue",
        "tilewise.model.latency:async_in_flight",
    ),
)
def latency_panel(p: Params) -> dict:
    """`model.latency.warps_to_hide_memory` / `warps_to_hide_issue` with the resident warps from
    occupancy, the same over block sizes, and `async_in_flight` for Hopper's one-block-per-SM way."""
    from tilewise.model import latency

    g = p.gpu()
    kind = p.choice("kind", "memory", ("memory", "issue"))
    default_latency = latency.LATENCY_CYCLES["hbm" if kind == "memory" else "fma"]
    lat = p.int("latency", default_latency, 1, 5000)
    width = p.choice("width", "16", ("4", "8", "16"))
    ilp = p.int("ilp", 1, 1, 8)
    threads = p.int("threads", 256, 32, g.max_threads_per_block)
    registers = p.int("registers", 32, 0, g.max_regs_per_thread)
    stages = p.int("stages", 4, 1, 16)
    stage_kb = p.int("stage_kb", 32, 1, 227)

    def run(t: int):
        if kind == "memory":
            return latency.warps_to_hide_memory(lat, int(width), ilp, g, t, registers)
        return latency.warps_to_hide_issue(lat, 1.0, ilp, g, t, registers)

    cur = run(threads)
    curve = []
    for t in range(32, g.max_threads_per_block + 1, 32):
        try:
            r = run(t)
        except InputError:
            continue
        curve.append({"threads": t, "resident_warps": r.resident_warps, "hidden_fraction": r.hidden_fraction})
    return {
        "gpu": _gpu_summary(g),
        "kind": kind,
        "current": cur.to_dict(),
        "curve": curve,
        "async": latency.async_in_flight(stages, stage_kb * 1024, lat if kind == "memory" else default_latency, g),
        "latency_defaults": latency.LATENCY_CYCLES,
    }


# ------------------------------------------------------------------------- pipeline designs


@panel(
    "pipeline",
    "Compare three designs",
    ("gpu", "head_dim", "n", "hit", "stages", "tiles"),
    needs=("tilewise.model.pipeline:compare", "tilewise.model.pipeline:attention_tile_times"),
)
def pipeline_panel(p: Params) -> dict:
    """`model.pipeline.compare` on per-tile times from `attention_tile_times`: each design's
    discrete-event timeline (the events to draw) and the Tensor Cores' utilisation."""
    from tilewise.model import pipeline

    g = p.gpu()
    d = p.int("head_dim", 128, 32, 256)
    n = p.int("n", 128, 16, 256)
    hit = p.float("hit", 0.9, 0.0, 0.99)
    stages = p.int("stages", 2, 1, 8)
    tiles = p.int("tiles", 6, 1, 32)
    times = pipeline.attention_tile_times(d, n, 64, "bf16", hit, g)
    timelines = pipeline.compare(tiles, times.load, times.mma, times.softmax, stages)
    return {
        "gpu": _gpu_summary(g),
        "times": times.to_dict(),
        "designs": [t.to_dict() for t in timelines.values()],
    }


# -------------------------------------------------------------------------------- warp access

# Presets: the tips document's patterns, as element-index expressions in `lane`.
ACCESS_PRESETS = {
    "contiguous": ("lane", "32 threads read consecutive elements: one request, the fewest sectors"),
    "strided": ("lane * 1024", "each thread one row (1024 elements) apart: a sector per lane"),
    "column": ("lane * 32", "a column of a 32 x 32 tile: in shared memory every lane hits the same bank"),
    "padded": ("lane * 33", "the same column with each row padded to 33 elements: 32 different banks"),
    "swizzled": ("lane * 32 + (lane ^ 1)", "column 1 of a 32 x 32 tile stored at row * 32 + (col ^ row)"),
    "broadcast": ("0", "every lane reads the same element: a broadcast"),
}
ACTIVE_MASKS = {"all": 0xFFFFFFFF, "half": 0x0000FFFF, "even": 0x55555555, "one": 0x00000001}


@panel(
    "access",
    "A warp's 32 addresses: sectors and banks",
    ("space", "width", "preset", "expr", "active", "store", "atomic"),
    needs=(
        "tilewise.sim:analyze_access",
        "tilewise.sim:shared_passes",
        "tilewise.sim.access:SECTOR",
        "tilewise.sim.access:BANKS",
    ),
)
def access_panel(p: Params) -> dict:
    """`tilewise.sim.analyze_access` on the 32 addresses an index expression gives.

    The counts (sectors and requests, or wavefronts and bank conflicts) are the simulator's,
    which equal Nsight Compute's on an H200. The per-lane sector and bank numbers only place
    each lane in the drawing: a sector is 32 bytes of address space, a bank the 4-byte word
    index modulo 32, the access module's own constants.
    """
    from tilewise import sim
    from tilewise.sim import access
    from tilewise.sim.memory import GLOBAL_BASE
    from tilewise.web.lane_expr import lane_indices

    space = p.choice("space", "global", access.SPACES)
    width = int(p.choice("width", "4", tuple(str(w) for w in access.WIDTHS)))
    preset = p.choice("preset", "contiguous", (*ACCESS_PRESETS, "custom"))
    if preset == "custom" or p.has("expr"):
        expr = p.values.get("expr", "lane")
        preset = "custom"
    else:
        expr = ACCESS_PRESETS[preset][0]
    mask_name = p.choice("active", "all", tuple(ACTIVE_MASKS))
    store = p.choice("store", "0", ("0", "1", "false", "true")) in ("1", "true")
    atomic = p.choice("atomic", "0", ("0", "1", "false", "true")) in ("1", "true")
    if atomic and store:
        raise InputError("pick one operation: store=1 or atomic=1, not both")
    idx = lane_indices(expr, access.WARP)
    base = GLOBAL_BASE if space == "global" else 0
    addresses = [base + i * width for i in idx]
    mask = ACTIVE_MASKS[mask_name]
    counts = sim.analyze_access(addresses, width, space, active=mask, store=store, atomic=atomic)
    lanes = []
    for lane, a in enumerate(addresses):
        words = range(a // access.BANK_BYTES, (a + width - 1) // access.BANK_BYTES + 1)
        lanes.append(
            {
                "lane": lane,
                "index": idx[lane],
                "address": a,
                "offset": a - base,
                "active": bool(mask >> lane & 1),
                "sector": (a - base) // access.SECTOR,
                "words": list(words),
                "banks": sorted({w % access.BANKS for w in words}),
            }
        )
    # For the drawing only: what each bank is asked for (distinct words) and which sectors are touched.
    # The counts above are the simulator's; these lists just say where to draw each lane's line.
    bank_words: dict[int, set[int]] = {}
    for ln in lanes:
        if ln["active"]:
            for w in ln["words"]:
                bank_words.setdefault(w % access.BANKS, set()).add(w)
    sectors = sorted({ln["sector"] for ln in lanes if ln["active"]})
    passes = sim.shared_passes(addresses, width, active=mask, store=store) if space == "shared" and not atomic else None
    return {
        "passes": passes,
        "space": space,
        "width": width,
        "preset": preset,
        "bank_words": [len(bank_words.get(b, ())) for b in range(access.BANKS)],
        "sectors": sectors,
        "expr": expr,
        "active": mask_name,
        "store": store,
        "atomic": atomic,
        "counts": counts,
        "lanes": lanes,
        "presets": {k: {"expr": v[0], "about": v[1]} for k, v in ACCESS_PRESETS.items()},
        "sector_bytes": access.SECTOR,
        "banks": access.BANKS,
        "bank_bytes": access.BANK_BYTES,
    }


# ---------------------------------------------------------------------------------- divergence


@panel(
    "divergence",
    "Divergence: both sides of a branch",
    ("variant", "seed"),
    needs=("tilewise.sim:launch", "tilewise.sim:kernel", "tilewise.sim:select", "tilewise.sim.report:report"),
)
def divergence_panel(p: Params) -> dict:
    """Two warps run a branchy kernel in the simulator (`tilewise.sim.launch`), one launch per warp;
    the trace gives each source line's warp instructions and active lanes."""
    import numpy as np

    from tilewise import sim
    from tilewise.sim.report import report as sim_report
    from tilewise.web.sim_kernels import KERNELS

    variant = p.choice("variant", "data", tuple(KERNELS))
    seed = p.int("seed", 1, 0, 1_000_000)
    rng = np.random.default_rng(seed)
    # 64 values, exactly half of them positive, in random order (or sorted so each warp agrees).
    mags = rng.uniform(0.1, 2.0, 64).astype(np.float32)
    x = np.concatenate([-mags[:32], mags[32:]])
    x = np.sort(x) if variant == "sorted" else rng.permutation(x)
    kern = KERNELS[variant]
    warps = []
    source = None
    for w in range(2):
        xw = np.ascontiguousarray(x[32 * w : 32 * w + 32])
        yw = np.full(32, np.nan, dtype=np.float32)
        side = np.zeros(32, dtype=np.int32)
        tr = sim.launch(kern, 1, 32, xw, yw, side, w, hazards=False)
        totals = sim_report(tr)["totals"]
        info = tr.info
        if source is None:
            source = [
                {"line": ln, "text": info.source_lines[ln]}
                for ln in sorted(info.source_lines)
                if info.source_lines[ln].strip()
            ]
        warps.append(
            {
                "x": [float(v) for v in xw],
                "side": [int(s) for s in side],
                "lines": {str(ln): {"inst": int(v[0]), "lanes": int(v[1])} for ln, v in tr.lines.items()},
                "warp_instructions": totals["warp_instructions"],
                "lane_efficiency": totals["lane_efficiency"],
            }
        )
    return {
        "variant": variant,
        "kernel": kern.__name__ if hasattr(kern, "__name__") else str(kern),
        "source": source,
        "warps": warps,
        "warp_size": 32,
    }
