"""`tilewise explain moe`: an MoE layer as a grouped GEMM, and what per-head routing costs.

With short main loops the prologue and epilogue show, and MoE is the classic case: each expert
gets few tokens, so its matrices are small, sometimes with fewer tiles than SMs. The fix is a persistent grouped GEMM whose tiles are found by a prefix sum and a binary
search (`tilewise.model.waves`). And for FlashFFN extended to MoE: routing moves from per
token to per (token, head), so with 16 heads the rows each expert receives are cut to 1/16.
Matrices get smaller, M can hardly reach wgmma's 64, the main loop is short, and
prologue and epilogue overhead takes a large share.

The accounting used for `--heads H`: the same tokens x top_k routed rows, now
(token, head) slices d_model / H wide, are spread over H x E isolated head-experts (E per
head, each [d_model / H, d_ff]: the same parameters in all), so each expert sees 1/H of the
rows and the gate/up GEMM's K is d_model / H. Routing is taken as balanced. In this accounting
the FLOPs fall to 1/H as well, so compare the two by share of peak, not by time.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from tilewise import gpus as _gpus
from tilewise import validate
from tilewise.errors import cli_int, require, shown
from tilewise.explain.predicted import prediction
from tilewise.explain.report import Report, fmt_flops, fmt_time, pct
from tilewise.model import mma, traffic, waves
from tilewise.model.tensorcore import WGMMA_M
from tilewise.util import cdiv

DEFAULTS = dict(
    experts=64, tokens=4096, top_k=8, d_model=2048, d_ff=1024, heads=None, block_m=None, block_n=None, block_k=None
)


def balanced_rows(routed: int, experts: int) -> list[int]:
    """`routed` rows over `experts` as evenly as possible."""
    q, rem = divmod(routed, experts)
    return [q + (1 if i < rem else 0) for i in range(experts)]


def _gemms(
    rows: list[int], d_in: int, d_ff: int, d_out: int, bm: int, bn: int, bk: int, dt: str, g: _gpus.GPU
) -> tuple[waves.GroupedGemmCost, waves.GroupedGemmCost]:
    up = waves.grouped_gemm_cost(rows, d_in, 2 * d_ff, bm, bn, bk, dt, g)
    down = waves.grouped_gemm_cost(rows, d_ff, d_out, bm, bn, bk, dt, g)
    return up, down


def explain(
    experts: int = 64,
    tokens: int = 4096,
    top_k: int = 8,
    d_model: int = 2048,
    d_ff: int = 1024,
    heads: int | None = None,
    block_m: int | None = None,
    block_n: int | None = None,
    block_k: int | None = None,
    dtype: str = "bf16",
    gpu: str = _gpus.DEFAULT_GPU,
) -> Report:
    """Report for an MoE layer (gate/up [d_model, 2 d_ff] and down [d_ff, d_model] per expert)."""
    experts, tokens = validate.size("experts", experts), validate.size("tokens", tokens)
    top_k = validate.size("top_k", top_k, maximum=experts)
    d_model, d_ff = validate.size("d_model", d_model), validate.size("d_ff", d_ff)
    h = 1 if heads is None else validate.size("heads", heads)
    require(d_model % h == 0, f"d_model must be a multiple of heads, got d_model={d_model}, heads={h}")
    # The report walks every (head-)expert's tiles in Python: bound the count so it answers within a second.
    validate.bounded("experts x heads", experts * h, validate.MAX_EXPERTS, "the report lists every expert's tiles")
    g = _gpus.get(gpu)
    dt = _gpus.dtype_name(dtype)
    require(
        dt in ("bf16", "fp16"), f"dtype must be bf16 or fp16 (the grouped GEMM's measured tiles), got {shown(dtype)}"
    )
    e = _gpus.element_bytes(dt)
    native = mma.path(g, dt)
    # Tiles: M in 16-row MMA slabs, N in 8-column steps, K in the MMA's k = 16, each at most 256 (512 for K).
    # By default the tiles the kernel picks for this many rows per expert (model.waves.grouped_tile).
    auto = waves.grouped_tile(tokens * top_k / (experts * h), 2 * d_ff)
    bm = validate.size("block_m", auto[0] if block_m is None else block_m, minimum=16, maximum=256)
    bn = validate.size("block_n", auto[1] if block_n is None else block_n, minimum=8, maximum=256)
    bk = validate.size("block_k", auto[2] if block_k is None else block_k, minimum=16, maximum=512)
    validate.multiple("block_m", bm, 16, "the MMA's 16-row slabs")
    validate.multiple("block_n", bn, 8, "the MMA's N steps by 8")
    validate.multiple("block_k", bk, 16, f"the MMA's k = 16 for {dt}")
    validate.fits_memory(
        g,
        {
            "expert weights": experts * 3 * d_model * d_ff * e,
            "tokens in and out": 2 * tokens * d_model * e,
            "routed rows": tokens * top_k * (d_model + 2 * d_ff) * e,
        },
        "the MoE layer's weights and activations",
    )
    p = _Moe(experts, tokens, top_k, d_model, d_ff, heads, h, block_m, block_n, block_k, bm, bn, bk, dt, g, native)
    r = Report.on_gpu(
        kind="moe",
        title=(
            f"MoE layer: {tokens} tokens, top-{top_k} of {experts} experts, d_model {d_model}, d_ff {d_ff}"
            f"{f', per-(token, head) routing over {h} heads' if heads else ''} ({dt}) on {g.name}"
        ),
        gpu=g,
        inputs=dict(
            experts=experts,
            tokens=tokens,
            top_k=top_k,
            d_model=d_model,
            d_ff=d_ff,
            heads=heads,
            block_m=bm,
            block_n=bn,
            block_k=bk,
            dtype=dt,
        ),
    )

    if native.m != WGMMA_M:
        r.notes.append(
            f"The {g.name} has no wgmma: its MMA is {native.instruction} ({native.m} rows, issued by "
            f"{native.issued_by}); the row fills below are against {native.m} rows."
        )

    rows = _routing(r, p)
    cases = _grouped_gemms(r, p, *rows)
    _advice(r, p, cases)
    return r


@dataclass(frozen=True)
class _Moe:
    """The checked problem every step reads: sizes, routing, the tiles asked for and chosen, GPU and MMA path."""

    experts: int
    tokens: int
    top_k: int
    d_model: int
    d_ff: int
    heads: int | None
    h: int
    block_m: int | None
    block_n: int | None
    block_k: int | None
    bm: int
    bn: int
    bk: int
    dt: str
    g: _gpus.GPU
    native: mma.MmaPath

    @property
    def routed(self) -> int:
        return self.tokens * self.top_k


# A case: the gate/up and down GEMMs, the rows per expert, and the GEMMs' K (d_model or a head's slice).
_Case = tuple[waves.GroupedGemmCost, waves.GroupedGemmCost, list[int], int]


def _mma_fill(rows: list[int], m: int) -> float:
    """Rows over rows rounded up to this GPU's MMA M, per expert (wgmma_fill is the 64-row figure)."""
    used = [x for x in rows if x]
    return float(sum(used) / sum(cdiv(x, m) * m for x in used))


def _routing(r: Report, p: _Moe) -> tuple[list[int], list[int], float, float]:
    experts, tokens, top_k, d_model, heads, h, native, routed = (
        p.experts, p.tokens, p.top_k, p.d_model, p.heads, p.h, p.native, p.routed
    )  # fmt: skip
    # 1. Routing: rows per expert.
    mname = native.name
    rows_tok = balanced_rows(routed, experts)
    rows_head = balanced_rows(routed, experts * h)
    per_tok = routed / experts
    per_head = routed / (experts * h)
    s = r.step(
        "routing",
        "Routing: rows per expert",
        routed_rows=routed,
        rows_per_expert_per_token=per_tok,
        rows_per_expert=per_head,
        ratio=per_head / per_tok,
        experts_total=experts * h,
        wgmma_m=WGMMA_M,
        mma_m=native.m,
        instruction=native.instruction,
    )
    s.say(
        f"{tokens} tokens x top-{top_k} = {routed:,} routed rows over {experts} experts: {per_tok:g} rows per expert "
        f"(balanced routing; real routers are uneven, which only makes the small experts smaller)."
    )
    if heads:
        s.say(
            f"Per-(token, head) routing with {h} heads: the same {routed:,} rows, now {d_model // h}-wide slices, go to "
            f"{h} x {experts} = {experts * h} isolated head-experts: {per_head:g} rows each, 1/{h} of before "
            f"({pct(per_head / per_tok)}). {mname}'s M is {native.m}: {per_head:g} rows fill "
            f"{pct(min(1.0, per_head / (cdiv(max(1, int(per_head)), native.m) * native.m)))} of it."
        )
    else:
        s.say(f"{mname}'s M is {native.m}: {per_tok:g} rows per expert is {per_tok / native.m:.3g} x {native.m}.")
    return rows_tok, rows_head, per_tok, per_head


def _grouped_gemms(
    r: Report, p: _Moe, rows_tok: list[int], rows_head: list[int], per_tok: float, per_head: float
) -> dict[str, _Case]:
    experts, tokens, top_k, d_model, d_ff, heads, h = p.experts, p.tokens, p.top_k, p.d_model, p.d_ff, p.heads, p.h
    block_m, block_n, block_k, bm, bn, bk, dt, g, native = (
        p.block_m, p.block_n, p.block_k, p.bm, p.bn, p.bk, p.dt, p.g, p.native
    )  # fmt: skip
    mname = native.name

    # 2. The grouped GEMMs, per token and (if asked) per head.
    # Each case runs the tiles the kernel picks for its own rows per expert, unless tiles were given.
    def tiles_for(rows_per_expert: float) -> tuple[int, int, int]:
        t = waves.grouped_tile(rows_per_expert, 2 * d_ff)
        return (
            bm if block_m is not None else t[0],
            bn if block_n is not None else t[1],
            bk if block_k is not None else t[2],
        )

    def mma_fill(rows: list[int]) -> float:
        return _mma_fill(rows, native.m)

    base_up, base_down = _gemms(rows_tok, d_model, d_ff, d_model, *tiles_for(per_tok), dt, g)
    cases = {"per_token": (base_up, base_down, rows_tok, d_model)}
    if heads:
        hu, hd = _gemms(rows_head, d_model // h, d_ff, d_model // h, *tiles_for(per_head), dt, g)
        cases["per_head"] = (hu, hd, rows_head, d_model // h)
    clock = g.tensor_clock_mhz * 1e6
    for name, (up, down, rows, d_in) in cases.items():
        label = "per token" if name == "per_token" else f"per (token, head), {h} heads"
        flops = traffic.grouped_gemm_flops(rows, d_in, 2 * d_ff) + traffic.grouped_gemm_flops(rows, d_ff, d_in)
        t_p = (up.cycles_persistent + down.cycles_persistent) / clock
        t_l = (up.cycles_per_launch + down.cycles_per_launch) / clock
        s = r.step(
            name,
            f"The grouped GEMMs, {label}",
            flops=flops,
            gate_up={
                "m": max(rows),
                "k": d_in,
                "n": 2 * d_ff,
                "tiles": up.schedule.total_tiles,
                "k_steps": up.tile.k_steps,
                "m_fill": up.m_fill,
                "wgmma_fill": up.wgmma_fill,
                "mma_fill": mma_fill(rows),
                "waves": up.waves.waves,
                "prologue_epilogue_share": up.tile.share,
                "overhead_share_persistent": up.overhead_share_persistent,
                "overhead_share_per_launch": up.overhead_share_per_launch,
                "step_bound": up.tile.step_bound,
            },
            down={
                "m": max(rows),
                "k": d_ff,
                "n": d_in,
                "tiles": down.schedule.total_tiles,
                "k_steps": down.tile.k_steps,
                "m_fill": down.m_fill,
                "wgmma_fill": down.wgmma_fill,
                "mma_fill": mma_fill(rows),
                "waves": down.waves.waves,
                "prologue_epilogue_share": down.tile.share,
                "overhead_share_persistent": down.overhead_share_persistent,
                "overhead_share_per_launch": down.overhead_share_per_launch,
                "step_bound": down.tile.step_bound,
            },
            prefix_head=list(up.schedule.prefix[:5]),
            time_persistent_s=t_p,
            time_per_launch_s=t_l,
            tflops_persistent=flops / t_p / 1e12,
            peak_share_persistent=flops / t_p / _gpus.peak_flops(g, dt),
        )
        for gname, c, k_in, n_out in (("gate/up", up, d_in, 2 * d_ff), ("down", down, d_ff, d_in)):
            s.say(
                f"{gname}: [{max(rows)}, {k_in}] x [{k_in}, {n_out}] per expert; {c.tile.block_m} x {c.tile.block_n} tiles: "
                f"{c.schedule.m_tiles[0]} x {c.schedule.n_tiles} per expert, {c.schedule.total_tiles:,} in all "
                f"({c.waves.waves:.2f} waves on {g.sms} SMs); M tiles {pct(c.m_fill)} full ({mname} {pct(mma_fill(rows))}). "
                f"Main loop {k_in} / {c.tile.block_k} = {c.tile.k_steps} step(s) ({c.tile.step_bound}-bound); prologue + "
                f"epilogue are {pct(c.tile.share)} of a tile; of the whole GEMM {pct(c.overhead_share_per_launch)} "
                f"with a block per tile, {pct(c.overhead_share_persistent)} persistent."
            )
        prediction(
            s, "moe",
            {"tokens": tokens, "d_model": d_in, "d_ff": d_ff, "experts": experts * (h if name == "per_head" else 1),
             "top_k": top_k, "dtype": dt},
            g.key, what=f"the fused MoE layer {label} (routing, both grouped GEMMs at the advisor's top-1, the top-k sum)",
        )  # fmt: skip
        s.say(
            f"{fmt_flops(flops)}; the tile sketch above: {fmt_time(t_p)} persistent vs {fmt_time(t_l)} with a block per tile: "
            f"{flops / t_p / 1e12:.0f} TFLOP/s, {pct(flops / t_p / _gpus.peak_flops(g, dt))} of peak. "
            f"A tile finds its expert by binary search in the prefix sum {list(up.schedule.prefix[:4])}..."
        )
    return cases


def _advice(r: Report, p: _Moe, cases: dict[str, _Case]) -> None:
    heads, g, native = p.heads, p.g, p.native
    mname = native.name

    # Advice.
    def mma_fill(rows: list[int]) -> float:
        return _mma_fill(rows, native.m)

    last = cases["per_head" if heads else "per_token"]
    up = last[0]
    if mma_fill(last[2]) < 1:
        r.advice.append(
            f"M per expert ({max(last[2])}) does not fill {mname}'s {native.m} rows ({pct(mma_fill(last[2]))}): group more "
            "tokens per expert (larger batches, fewer experts per routing pool) or accept the padding."
        )
    if up.tile.share > 0.15:
        r.advice.append(
            f"The gate/up main loop is {up.tile.k_steps} step(s): prologue/epilogue take {pct(up.tile.share)} of each "
            "tile. Use a persistent grouped GEMM so the pipeline is set up once per SM, and overlap each tile's "
            "epilogue with the next tile's loads."
        )
    if up.schedule.total_tiles < g.sms:
        r.advice.append(f"Only {up.schedule.total_tiles} tiles for {g.sms} SMs: split K or use smaller tiles.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--experts", type=cli_int, default=64, help="experts (per head with --heads) (default 64)")
    p.add_argument("--tokens", type=cli_int, default=4096, help="tokens in the batch (default 4096)")
    p.add_argument("--top-k", type=cli_int, default=8, help="experts per token (default 8)")
    p.add_argument("--d-model", type=cli_int, default=2048, help="model width (default 2048)")
    p.add_argument("--d-ff", type=cli_int, default=1024, help="expert intermediate width (default 1024)")
    p.add_argument("--heads", type=cli_int, default=None, help="route per (token, head) over H heads (FlashFFN-MoE)")
    p.add_argument(
        "--block-m", type=cli_int, default=None, help="tile M (default: the kernel's choice for the rows per expert)"
    )
    p.add_argument("--block-n", type=cli_int, default=None, help="tile N (default: the kernel's choice)")
    p.add_argument("--block-k", type=cli_int, default=None, help="K step (default: the kernel's choice)")
    p.add_argument("--dtype", default="bf16", help="bf16 or fp16 (default bf16)")
    p.add_argument("--gpu", default=_gpus.DEFAULT_GPU, help=f"registry name (default {_gpus.DEFAULT_GPU})")


def from_args(a: argparse.Namespace) -> Report:
    return explain(
        experts=a.experts,
        tokens=a.tokens,
        top_k=a.top_k,
        d_model=a.d_model,
        d_ff=a.d_ff,
        heads=a.heads,
        block_m=a.block_m,
        block_n=a.block_n,
        block_k=a.block_k,
        dtype=a.dtype,
        gpu=a.gpu,
    )


__all__ = ["DEFAULTS", "add_arguments", "balanced_rows", "explain", "from_args"]
