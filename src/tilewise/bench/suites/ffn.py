"""`tilewise bench ffn`: FlashFFN against the unfused multi-head layer and a dense SwiGLU; MH-MoE.

Per (T, I, d_h), H heads, bf16:
* `flash_ffn_fwd` vs the unfused layer (bmm per head + elementwise, input laid out [H, T, d_h]):
  time, and peak memory of an inference call;
* `flash_ffn_fwdbwd` vs the same layer: forward + backward time, the extra memory of a training
  step (peak over the step minus what was allocated before it) and the activation memory saved for
  the backward;
* beside each, a dense SwiGLU FFN with the same parameters and FLOPs (d_model = H d_h, intermediate
  I, cuBLAS through F.linear): `dense_ms`, `speedup_vs_dense`.
* `mhmoe_fwd` (with --part moe or all): MultiHeadMoE's per-(token, head) expert FFN on our grouped
  GEMM vs the same routing run with torch._grouped_mm.

FLOPs and bytes: tilewise.model.traffic (mhffn_*), backward counts from tilewise.explain.ffn.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from typing import Any

from tilewise.bench import harness, shapes
from tilewise.errors import InputError
from tilewise.explain import ffn as xffn
from tilewise.model import traffic

NAME = "ffn"
DEVICE = "cuda"  # the benchmark runs on the GPU; a dry run on the CPU may set it to "cpu"
HELP = "FlashFFN (fused multi-head SwiGLU, fwd and fwd+bwd) vs unfused bmm and dense cuBLAS SwiGLU; MH-MoE"


EXAMPLES = """examples:
  tilewise bench ffn --tokens 16384 --intermediate 512 --head-dims 128
  tilewise bench ffn --tokens 8192,32k --intermediate 1408 --head-dims 64 --heads 32 --no-dense
  tilewise bench ffn --part moe --moe-shapes '4096,16,128,8,256,2;2048,32,64,16,128,1'   # T,H,d_h,E,f,k"""


def _moe_problems(args: argparse.Namespace) -> list[tuple[int, int, int, int, int, int]]:
    """(tokens, heads, head_dim, experts per head, expert width, top-k) for --part moe."""
    if args.moe_shapes:
        return shapes.mhmoe(args.moe_shapes)
    experts = shapes.count("--moe-experts", "experts per head", args.moe_experts)
    width = shapes.count("--moe-width", "the expert width", args.moe_width)
    top_k = shapes.count("--moe-topk", "top-k", args.moe_topk)
    if top_k > experts:
        raise InputError(f"--moe-topk must be at most --moe-experts, got {top_k} > {experts}")
    return [(t, args.heads, 128, experts, width, top_k) for t in shapes.int_list("--moe-tokens", args.moe_tokens)]


def check(args: argparse.Namespace) -> None:
    """Refuse bad arguments before any GPU work."""
    for option in ("tokens", "intermediate", "head_dims"):
        shapes.int_list("--" + option.replace("_", "-"), getattr(args, option))
    shapes.count("--heads", "heads", args.heads)
    if args.dtype not in ("bf16", "fp16"):
        raise InputError(f"--dtype must be bf16 or fp16, got {args.dtype!r}")
    _moe_problems(args)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tokens", default="4096,16384,65536", help="token counts T (default 4096,16384,65536)")
    p.add_argument(
        "--intermediate", default="256,512,1024", help="per-head intermediate sizes I (default 256,512,1024)"
    )
    p.add_argument("--head-dims", default="64,128", help="head dims d_h (default 64,128)")
    p.add_argument("--heads", type=int, default=16, help="heads H (default 16)")
    p.add_argument("--dtype", default="bf16", help="bf16 or fp16 (default bf16)")
    p.add_argument("--part", default="ffn", choices=("ffn", "moe", "all"), help="what to run (default ffn)")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds per pair (default 3)")
    p.add_argument("--rep-ms", type=float, default=60, help="do_bench repetition time per round (default 60)")
    p.add_argument("--no-dense", action="store_true", help="skip the dense SwiGLU comparison")
    p.add_argument("--moe-tokens", default="4096,16384", help="MH-MoE token counts (default 4096,16384)")
    p.add_argument("--moe-experts", type=int, default=8, help="MH-MoE experts per head (default 8)")
    p.add_argument("--moe-width", type=int, default=256, help="MH-MoE expert width (default 256)")
    p.add_argument("--moe-topk", type=int, default=2, help="MH-MoE top-k per (token, head) (default 2)")
    p.add_argument(
        "--moe-shapes",
        help="MH-MoE shapes 'T,H,d_h,E,f,k[;...]' (tokens, heads, head dim, experts per head, expert width, "
        "top-k); replaces --moe-tokens/--moe-experts/--moe-width/--moe-topk and --heads for the MoE part",
    )


# ------------------------------------------------------------------------------ peers


def unfused_heads_first(x: Any, wg: Any, wu: Any, wd: Any) -> Any:
    """The peer exactly as measured in measure_peers2.py: x [H, T, d_h] -> [H, T, d_h]."""
    import torch
    import torch.nn.functional as F

    return torch.bmm(F.silu(torch.bmm(x, wg)) * torch.bmm(x, wu), wd)


def dense_swiglu(x: Any, w_gate_up: Any, w_down: Any) -> Any:
    """x [T, d]; w_gate_up [2 I, d] (F.linear layout); w_down [d, I]."""
    import torch.nn.functional as F

    gu = F.linear(x, w_gate_up)
    g, u = gu.chunk(2, dim=-1)
    return F.linear(F.silu(g) * u, w_down)


def train_memory(fn: Callable[..., Any], inputs: Any, grad: Any) -> tuple[float, float]:
    """(peak extra MiB of one forward + backward, MiB allocated for the backward after the forward).

    Extra = above what was allocated before the step (inputs, weights); the output's own bytes
    are not subtracted (both layers have the same output).
    """
    import torch

    for t in inputs:
        t.grad = None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    y = fn()
    saved = torch.cuda.memory_allocated() - base
    y.backward(grad)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del y
    for t in inputs:
        t.grad = None
    return peak / 2**20, saved / 2**20


def infer_memory(fn: Callable[..., Any]) -> float:
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    with torch.no_grad():
        y = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del y
    return float(peak / 2**20)


# ------------------------------------------------------------------------------ suite


def ffn_model_spec(T: int, H: int, d: int, inter: int, dtype: str, backward: str | None = None) -> Any:
    """(kernel, problem, config) of `tilewise.model.predict` for a FlashFFN row: the composed "ffn" (its GEMMs,
    forward and with `backward` the backward kernels'; `tilewise.model.compose`)."""
    p = {"tokens": T, "heads": H, "head_dim": d, "intermediate": inter, "dtype": dtype}
    return "ffn", (p if backward is None else {**p, "backward": backward}), {}


def mhmoe_model_spec(
    T: int, heads: int, head_dim: int, experts: int, width: int, top_k: int, dtype: Any, on_gpu: bool
) -> Any:
    """The composed "moe" without routing for MH-MoE's expert forward: T x heads rows of d_h over heads x experts
    experts, with the tiles `kernels.mhmoe` takes (`moe_layer.moe_configs`)."""
    from tilewise.kernels.moe_layer import moe_configs

    up, down = moe_configs(T * heads, top_k, heads * experts, head_dim, width, dtype, on_gpu)
    name = {"torch.bfloat16": "bf16", "torch.float16": "fp16"}[str(dtype)]
    p = {"tokens": T * heads, "d_model": head_dim, "d_ff": width, "experts": heads * experts, "top_k": top_k,
         "dtype": name, "routing": False}  # fmt: skip
    return "moe", p, {"up": dataclasses.asdict(up), "down": dataclasses.asdict(down)}


def ffn_rows(
    tokens: list[int],
    inters: list[int],
    head_dims: list[int],
    heads: int,
    dtype_name: str,
    rounds: int,
    rep_ms: float,
    dense: bool = True,
    progress: Any = None,
    tags: dict[str, Any] | None = None,
    log: Any = None,
) -> list[dict[str, Any]]:
    """Rows for every (T, I, d_h): forward and forward + backward, each with the dense SwiGLU beside it."""
    tags = tags or harness.env_tags()
    cases = [(t, n, d) for d in head_dims for n in inters for t in tokens]
    it = progress(cases, total=len(cases), desc="ffn") if progress else cases
    rows: list[dict[str, Any]] = []
    for t, n, d in it:
        rows += _ffn_case(t, heads, d, n, dtype_name, rounds, rep_ms, dense, tags, log)
    return rows


def _ffn_case(
    T: int, H: int, d: int, inter: int, dtype_name: str, rounds: int, rep_ms: float, dense: Any, tags: Any, log: Any
) -> list[dict[str, Any]]:
    import torch

    from tilewise.kernels.ffn import MODE, flash_ffn

    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    dev = DEVICE
    gen = torch.Generator(device=dev).manual_seed(T + inter + d)
    z = torch.randn(T, H, d, device=dev, dtype=dt, generator=gen)
    wg = torch.randn(H, d, inter, device=dev, dtype=dt, generator=gen) / d**0.5
    wu = torch.randn(H, d, inter, device=dev, dtype=dt, generator=gen) / d**0.5
    wd = torch.randn(H, inter, d, device=dev, dtype=dt, generator=gen) / inter**0.5
    zh = z.transpose(0, 1).contiguous()  # the peer's layout [H, T, d]
    shape = f"T{T}_H{H}_dh{d}_I{inter}"
    fl = traffic.mhffn_flops(T, H, d, inter)
    nb = traffic.mhffn_bytes(T, H, d, inter, dtype_name)
    common = dict(tokens=T, heads=H, head_dim=d, intermediate=inter, intermediate_MiB=T * H * inter * 2 / 2**20)
    rows = []

    # ---- inference
    with torch.no_grad():
        tp = harness.time_pair(
            lambda i: flash_ffn(z, wg, wu, wd),
            lambda i: unfused_heads_first(zh, wg, wu, wd),
            rounds=rounds,
            rep_ms=rep_ms,
        )
    extra: dict[str, Any] = dict(
        common,
        **harness.timing_fields(tp),
        infer_peak_MiB=infer_memory(lambda: flash_ffn(z, wg, wu, wd)),
        peer_infer_peak_MiB=infer_memory(lambda: unfused_heads_first(zh, wg, wu, wd)),
    )
    # dense SwiGLU with the same parameters and FLOPs: d_model = H d_h, intermediate I
    dm = H * d
    if dense:
        x = torch.randn(T, dm, device=dev, dtype=dt, generator=gen)
        wgu = torch.randn(2 * inter, dm, device=dev, dtype=dt, generator=gen) / dm**0.5
        wdn = torch.randn(dm, inter, device=dev, dtype=dt, generator=gen) / inter**0.5
        with torch.no_grad():
            td = harness.time_pair(lambda i: dense_swiglu(x, wgu, wdn), None, rounds=rounds, rep_ms=rep_ms)
        extra.update(
            dense_ms=td["ours_ms"],
            speedup_vs_dense=td["ours_ms"] / tp["ours_ms"],
            dense_tflops=xffn.dense_swiglu_flops(T, dm, inter) / (td["ours_ms"] * 1e-3) / 1e12,
        )
    rows.append(
        harness.make_row(
            kernel="flash_ffn_fwd", shape=shape, dtype=dtype_name, peer="unfused_bmm_torch",
            ours_ms=tp["ours_ms"], peer_ms=tp["peer_ms"], flops=fl, nbytes=nb, tags=tags, extra=extra,
            model=ffn_model_spec(T, H, d, inter, dtype_name),
        )
    )  # fmt: skip
    if log:
        log(harness.format_table(rows[-1:]))

    # ---- training step
    zr = z.detach().clone().requires_grad_()
    zhr = zh.detach().clone().requires_grad_()
    ws = [w.detach().clone().requires_grad_() for w in (wg, wu, wd)]
    gy = torch.randn_like(z)
    gyh = gy.transpose(0, 1).contiguous()

    def ours_step(i: int = 0) -> None:
        flash_ffn(zr, *ws).backward(gy)

    def peer_step(i: int = 0) -> None:
        unfused_heads_first(zhr, *ws).backward(gyh)

    tp2 = harness.time_pair(ours_step, peer_step, rounds=rounds, rep_ms=rep_ms)
    peak_o, saved_o = train_memory(lambda: flash_ffn(zr, *ws), [zr, *ws], gy)
    peak_p, saved_p = train_memory(lambda: unfused_heads_first(zhr, *ws), [zhr, *ws], gyh)
    extra2: dict[str, Any] = dict(
        common,
        **harness.timing_fields(tp2),
        train_peak_extra_MiB=peak_o,
        peer_train_peak_extra_MiB=peak_p,
        memory_ratio=peak_p / peak_o if peak_o else None,
        saved_for_backward_MiB=saved_o,
        peer_saved_for_backward_MiB=saved_p,
        backward_mode=MODE,
        executed_flops=fl + xffn.mhffn_backward_flops(T, H, d, inter, MODE),
    )
    if dense:
        xr = x.detach().clone().requires_grad_()
        wd2 = [wgu.detach().clone().requires_grad_(), wdn.detach().clone().requires_grad_()]
        gx = torch.randn_like(x)

        def dense_step(i: int = 0) -> None:
            dense_swiglu(xr, *wd2).backward(gx)

        td2 = harness.time_pair(dense_step, None, rounds=rounds, rep_ms=rep_ms)
        peak_d, _ = train_memory(lambda: dense_swiglu(xr, *wd2), [xr, *wd2], gx)
        extra2.update(
            dense_ms=td2["ours_ms"], speedup_vs_dense=td2["ours_ms"] / tp2["ours_ms"], dense_train_peak_MiB=peak_d
        )
    rows.append(
        harness.make_row(
            kernel="flash_ffn_fwdbwd", shape=shape, dtype=dtype_name, peer="unfused_bmm_torch",
            ours_ms=tp2["ours_ms"], peer_ms=tp2["peer_ms"],
            flops=fl + xffn.mhffn_backward_flops(T, H, d, inter, "useful"),
            nbytes=nb + xffn.mhffn_backward_bytes(T, H, d, inter, dtype_name), tags=tags, extra=extra2,
            model=ffn_model_spec(T, H, d, inter, dtype_name, backward=MODE),
        )
    )  # fmt: skip
    if log:
        log(harness.format_table(rows[-1:]))
    if dev == "cuda":
        torch.cuda.empty_cache()
    return rows


def moe_rows(
    tokens: list[int],
    heads: int,
    head_dim: int,
    experts: int,
    width: int,
    top_k: int,
    dtype_name: str,
    rounds: int,
    rep_ms: float,
    tags: Any = None,
    log: Any = None,
) -> Any:
    """MH-MoE expert FFN (routing done, plan built) on our grouped GEMM vs torch._grouped_mm, same plan."""
    tags = tags or harness.env_tags()
    rows = []
    for t in tokens:
        rows.append(_moe_case(t, heads, head_dim, experts, width, top_k, dtype_name, rounds, rep_ms, tags))
        if log:
            log(harness.format_table(rows[-1:]))
    return rows


def _moe_case(
    T: int,
    heads: int,
    head_dim: int,
    experts: int,
    width: int,
    top_k: int,
    dtype_name: str,
    rounds: int,
    rep_ms: float,
    tags: Any,
) -> dict[str, Any]:
    import torch

    from tilewise.bench.mhmoe_peer import experts_forward_torch
    from tilewise.kernels import layers, mhmoe

    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    layer = layers.MultiHeadMoE(heads * head_dim, heads, head_dim, experts, width, top_k, device=DEVICE, dtype=dt)
    x = torch.randn(T, heads * head_dim, device=DEVICE, dtype=dt)
    with torch.no_grad():
        z, weights, experts_idx = layer.route(x)
        z = z.contiguous()
        p = mhmoe.plan(weights, experts_idx, heads * experts)
        tp = harness.time_pair(
            lambda i: layer.experts_forward(z, p),
            lambda i: experts_forward_torch(z, p, layer.w_gate_up, layer.w_down),
            rounds=rounds,
            rep_ms=rep_ms,
        )
        err = (
            (layer.experts_forward(z, p).float() - experts_forward_torch(z, p, layer.w_gate_up, layer.w_down).float())
            .abs()
            .max()
            .item()
        )
    counts = torch.diff(p.offsets.long(), prepend=p.offsets.new_zeros(1).long())
    fl = traffic.moe_layer_flops(T * heads, top_k, head_dim, width)
    nb = traffic.moe_layer_bytes(T * heads, top_k, head_dim, width, int((counts > 0).sum()), dtype_name)
    return harness.make_row(
        kernel="mhmoe_fwd", shape=f"T{T}_H{heads}_dh{head_dim}_E{experts}_f{width}_k{top_k}",
        dtype=dtype_name, peer="torch._grouped_mm", ours_ms=tp["ours_ms"], peer_ms=tp["peer_ms"],
        flops=fl, nbytes=nb, tags=tags,
        model=mhmoe_model_spec(T, heads, head_dim, experts, width, top_k, dt, DEVICE == "cuda"),
        extra=dict(
            **harness.timing_fields(tp), rows_per_expert_mean=float(counts.float().mean()),
            rows_per_expert_min=int(counts.min()), rows_per_expert_max=int(counts.max()), max_abs_diff_vs_peer=err,
            tokens=T, heads=heads, head_dim=head_dim, experts_per_head=experts, expert_width=width, top_k=top_k,
        ),
    )  # fmt: skip


def run(args: argparse.Namespace, progress: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if args.part in ("ffn", "all"):
        rows += ffn_rows(
            shapes.int_list("--tokens", args.tokens), shapes.int_list("--intermediate", args.intermediate),
            shapes.int_list("--head-dims", args.head_dims), args.heads, args.dtype,
            args.rounds, args.rep_ms, dense=not args.no_dense, progress=progress,
        )  # fmt: skip
    if args.part in ("moe", "all"):
        for t, heads, head_dim, experts, width, top_k in _moe_problems(args):
            rows += moe_rows([t], heads, head_dim, experts, width, top_k, args.dtype, args.rounds, args.rep_ms)
    return rows
