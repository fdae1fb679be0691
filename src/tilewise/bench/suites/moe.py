"""`tilewise bench moe`: the fused MoE layer vs a torch implementation built on torch._grouped_mm.

Both sides route the same way (`tilewise.kernels.moe_layer.route` and `permute`); the torch side
then gathers x into expert order, runs torch._grouped_mm for gate/up, SiLU * mul, torch._grouped_mm
for down, scales by the routing weights and sums each token's k slots. Ours fuses the gather
into the gate/up GEMM's loads, SiLU * mul into its epilogue, and the weights and the
scatter back to token-slot order into the down GEMM's epilogue.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from tilewise.bench import harness, shapes
from tilewise.model import traffic

DEVICE = "cuda"  # the suites run on the GPU (a CPU smoke test may change it)
NAME = "moe"
HELP = "fused MoE layer (forward) vs a torch implementation on torch._grouped_mm"

# name: (tokens, d_model, d_ff per expert, experts, top_k, gate)
CONFIGS: dict[str, tuple[int, int, int, int, int, str]] = {
    "qwen3_t4096": (4096, 2048, 768, 128, 8, "softmax"),  # Qwen3-30B-A3B-like
    "qwen3_t512": (512, 2048, 768, 128, 8, "softmax"),  # the same at 32 rows per expert
    "dsv3_t4096": (4096, 7168, 2048, 256, 8, "sigmoid"),  # DeepSeek-V3-like (routed experts only)
    "dsv3_t512": (512, 7168, 2048, 256, 8, "sigmoid"),  # the same at 16 rows per expert
}
EXAMPLES = """examples:
  tilewise bench moe --configs qwen3_t4096
  tilewise bench moe --configs '8192,4096,1536,64,6'              # T,d,f,E,k: 64 experts, top-6, softmax gate
  tilewise bench moe --configs 'qwen3_t512;2048,7168,2048,256,8,sigmoid' --cuda-graph"""


def parse_configs(text: str) -> list[tuple[str, int, int, int, int, int, str]]:
    """Preset names and/or 'T,d,f,E,k[,gate]' -> [(name, tokens, d_model, d_ff, experts, top_k, gate)]."""
    return shapes.moe(text, CONFIGS)


def check(args: argparse.Namespace) -> None:
    """Refuse bad arguments before any GPU work."""
    parse_configs(args.configs)


def moe_torch(x: Any, router_logits: Any, w_gate_up: Any, w_down: Any, top_k: int, gate: str = "softmax") -> Any:
    """The peer: routing as ours, then torch._grouped_mm twice with unfused glue around it."""
    import torch
    import torch.nn.functional as F

    from tilewise.kernels.moe_layer import permute, route

    T, d = x.shape
    E, _, f2 = w_gate_up.shape
    f = f2 // 2
    weights, experts = route(router_logits, top_k, gate)
    order, offsets = permute(experts, E)
    xs = x[torch.div(order, top_k, rounding_mode="floor")]  # [T k, d] in expert order
    h = torch._grouped_mm(xs, w_gate_up, offs=offsets)  # [T k, 2 f]
    h = F.silu(h[:, :f]) * h[:, f:]
    y = torch._grouped_mm(h, w_down, offs=offsets)  # [T k, d]
    y = y * weights.reshape(-1)[order].to(y.dtype)[:, None]
    out = torch.empty_like(y)
    out[order] = y  # back to token-slot order
    return out.view(T, top_k, d).sum(dim=1)


def make_inputs(problem: tuple[int, int, int, int, int, str], dtype: Any, device: Any = None, seed: int = 0) -> Any:
    """x [T, d], router logits [T, E] (fp32), w_gate_up [E, d, 2f], w_down [E, f, d] for (T, d, f, E, k, gate)."""
    import torch

    T, d, f, E, k, gate = problem
    device = device or DEVICE
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(T, d, device=device, dtype=dtype, generator=g)
    logits = torch.randn(T, E, device=device, dtype=torch.float32, generator=g)
    wgu = torch.randn(E, d, 2 * f, device=device, dtype=dtype, generator=g) / d**0.5
    wd = torch.randn(E, f, d, device=device, dtype=dtype, generator=g) / f**0.5
    return x, logits, wgu, wd, k, gate


def add_arguments(p: Any) -> None:
    p.add_argument(
        "--configs",
        "--shapes",
        dest="configs",
        default=",".join(CONFIGS),
        help="preset names (" + ",".join(CONFIGS) + "), or your own 'T,d,f,E,k[,gate][;...]': T tokens, d model "
        "width, f expert width, E experts, top-k, gate softmax (default) or sigmoid (default all presets)",
    )
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    p.add_argument("--rounds", type=int, default=3)


def model_spec(
    problem: tuple[int, int, int, int, int, str], dtype: str, cfg_up: Any, cfg_down: Any, routing: bool = True
) -> Any:
    """(kernel, problem, config) of `tilewise.model.predict` for a row: the composed "moe" (routing, the two
    grouped GEMMs with the tiles that ran, the top-k sum; `tilewise.model.compose`)."""
    T, d, f, E, k, gate = problem
    p = {"tokens": T, "d_model": d, "d_ff": f, "experts": E, "top_k": k, "gate": gate, "dtype": dtype,
         "routing": routing}  # fmt: skip
    return "moe", p, {"up": dataclasses.asdict(cfg_up), "down": dataclasses.asdict(cfg_down)}


def bench_config(
    name: str,
    problem: tuple[int, int, int, int, int, str],
    dtype_name: str,
    rounds: int,
    tags: dict[str, Any],
    configs: Any = None,
) -> dict[str, Any]:
    import torch

    from tilewise.kernels.moe_layer import moe, moe_configs, route

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    x, logits, wgu, wd, k, gate = make_inputs(problem, dtype)
    T, d = x.shape
    E, _, f2 = wgu.shape
    f = f2 // 2
    counts = torch.bincount(route(logits, k, gate)[1].reshape(-1), minlength=E).tolist()
    used = sum(1 for c in counts if c > 0)
    flops = traffic.moe_layer_flops(T, k, d, f)
    nbytes = traffic.moe_layer_bytes(T, k, d, f, used, dtype_name)
    t = harness.time_pair(
        lambda i: moe(x, logits, wgu, wd, k, gate=gate, configs=configs),
        lambda i: moe_torch(x, logits, wgu, wd, k, gate),
        rounds=rounds,
    )
    extra = harness.timing_fields(t)
    extra.update(rows_per_expert=T * k / E, experts_used=used, gate=gate, top_k=k)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    cfg_up, cfg_down = configs or moe_configs(T, k, E, d, f, dtype, True)
    model = model_spec(problem, dtype_name, cfg_up, cfg_down)
    for prefix, cfg, (K, N) in (("up_", cfg_up, (d, f)), ("down_", cfg_down, (f, d))):
        extra.update(
            {
                prefix + key: v
                for key, v in shapes.grouped_schedule_columns(counts, K, N, cfg, sms).items()
                if key != "weight_tbps"
            }
        )
    row = harness.make_row(
        kernel="moe", shape=f"{name}: T{T} d{d} d_ff{f} E{E} top{k} {gate}", dtype=dtype_name,
        peer="torch (torch._grouped_mm x2 + glue)", ours_ms=t["ours_ms"], peer_ms=t["peer_ms"],
        flops=flops, nbytes=nbytes, tags=tags, extra=extra, model=model,
    )  # fmt: skip
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
    return row


def run(args: argparse.Namespace, progress: Any) -> list[dict[str, Any]]:
    problems = parse_configs(args.configs)
    tags = harness.env_tags()
    return [
        bench_config(name, tuple(p), args.dtype, args.rounds, tags)
        for name, *p in progress(problems, total=len(problems), desc="moe")
    ]
