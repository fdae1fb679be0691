"""`tilewise bench grouped`: the persistent grouped GEMM vs torch._grouped_mm and a loop of matmuls.

The preset MoE expert shapes:
128 experts, K 2048, N 1536 at 8, 16, 32, 64, 128 rows per expert and with Zipf-skewed
routing; 256 experts, K 7168, N 4096 at 16 and 64 rows; 16 experts x 1024 rows, K 4096,
N 14336. Each row carries the model's prediction: the roofline time of the FLOPs and bytes of
`model.traffic.grouped_gemm_*`, and, from `model.waves.grouped_schedule`, the tiles, the
waves of tiles over the persistent programs and the share of time the per-tile prologue and
epilogue take (`prologue_share`).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any

from tilewise.bench import harness, shapes
from tilewise.model import traffic

DEVICE = "cuda"  # the suites run on the GPU (a CPU smoke test may change it)
NAME = "grouped"
HELP = "persistent grouped GEMM (MoE experts) vs torch._grouped_mm and a loop of matmuls"

# name: 'E,R,K,N' (experts, rows per expert or zipf = Zipf(s = 1) over a random expert order, mean 128 rows, K, N)
SHAPES: dict[str, str] = {
    "e128_r8": "128,8,2048,1536",
    "e128_r16": "128,16,2048,1536",
    "e128_r32": "128,32,2048,1536",
    "e128_r64": "128,64,2048,1536",
    "e128_r128": "128,128,2048,1536",
    "e128_zipf": "128,zipf,2048,1536",
    "e256_r16": "256,16,7168,4096",
    "e256_r64": "256,64,7168,4096",
    "e16_r1024": "16,1024,4096,14336",
}
EXAMPLES = """examples:
  tilewise bench grouped --shapes e128_r8,e16_r1024
  tilewise bench grouped --shapes '64,256,4096,1024'              # E,R,K,N: 64 experts x 256 rows
  tilewise bench grouped --shapes '60,zipf32,2048,1408;8,100/0/37/500/1/64/9/3000,4096,14336' --no-loop"""
zipf_counts = shapes.zipf_counts
model_columns = shapes.grouped_schedule_columns


def parse_shapes(text: str) -> list[tuple[str, list[int], int, int]]:
    """Preset names and/or 'E,R,K,N' shapes -> [(label, rows per expert, K, N)]."""
    return shapes.grouped(text, SHAPES)


def check(args: argparse.Namespace) -> None:
    """Refuse bad arguments before any GPU work."""
    parse_shapes(args.shapes)


# ------------------------------------------------------------------------------ inputs/peers


def make_inputs(counts: Any, K: int, N: int, dtype: Any, device: Any = None, copies: int = 1, seed: int = 0) -> Any:
    """x [T, K], w [E, K, N] (scaled so y is O(1)), offsets int32 [E]; `copies` sets of them."""
    import torch

    device = device or DEVICE
    g = torch.Generator(device=device).manual_seed(seed)
    T = sum(counts)
    out = []
    for _ in range(copies):
        x = torch.randn(T, K, device=device, dtype=dtype, generator=g)
        w = torch.randn(len(counts), K, N, device=device, dtype=dtype, generator=g) / math.sqrt(K)
        out.append(x)
        out.append(w)
    offsets = torch.tensor(counts, device=device).cumsum(0).to(torch.int32)
    return out, offsets


def loop_matmul(x: Any, w: Any, counts: Any) -> Any:
    """The plain peer: one torch.matmul per expert (host-side split by the known counts)."""
    import torch

    y = torch.empty(x.shape[0], w.shape[2], device=x.device, dtype=x.dtype)
    s = 0
    for e, c in enumerate(counts):
        if c:
            torch.matmul(x[s : s + c], w[e], out=y[s : s + c])
        s += c
    return y


# ------------------------------------------------------------------------------------ suite


def add_arguments(p: Any) -> None:
    p.add_argument(
        "--shapes",
        default=",".join(SHAPES),
        help="preset names (" + ",".join(SHAPES) + "), or your own 'E,R,K,N[;...]': E experts, R rows per expert "
        "(an integer, zipf / zipfM for Zipf-skewed routing with mean M rows, or E counts joined by '/'), "
        "x [T, K] times w [E, K, N] (default all presets)",
    )
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds per pair (default 3)")
    p.add_argument("--no-loop", action="store_true", help="skip the loop-of-matmuls peer")


def bench_shape(
    shape: str,
    counts: list[int],
    K: int,
    N: int,
    dtype_name: str,
    rounds: int,
    tags: dict[str, Any],
    loop: bool = True,
    config: Any = None,
) -> list[dict[str, Any]]:
    """Rows for one shape: ours vs torch._grouped_mm and (if `loop`) ours vs a loop of matmuls."""
    import torch

    from tilewise.kernels.grouped_gemm import choose_config, grouped_matmul

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    E = len(counts)
    T = sum(counts)
    wbytes = E * K * N * 2
    copies = max(1, min(3, int(2e9 // max(wbytes, 1))))  # rotate inputs when they fit, so L2 is cold
    tensors, offsets = make_inputs(counts, K, N, dtype, copies=copies)
    xs, ws = tensors[0::2], tensors[1::2]
    cfg = config or choose_config(T / E, N, K, dtype, experts=E)  # the kernel's own default (the advisor's)
    ys = [torch.empty(T, N, device=DEVICE, dtype=xs[0].dtype) for _ in range(copies)]
    flops = traffic.grouped_gemm_flops(counts, K, N)
    nbytes = traffic.grouped_gemm_bytes(counts, K, N, dtype_name)
    extra = model_columns(counts, K, N, cfg, torch.cuda.get_device_properties(0).multi_processor_count)

    extra.update(
        harness.model_columns(
            "grouped", {"experts": E, "rows_per_expert": max(1, round(T / E)), "n": N, "k": K, "dtype": dtype_name},
            dataclasses.asdict(cfg), harness.registry_key_for(tags.get("gpu", "")),
        )
    )  # fmt: skip

    def ours(i: int) -> Any:
        return grouped_matmul(xs[i], ws[i], offsets, out=ys[i], config=cfg, check_offsets=False)

    def peer(i: int) -> Any:
        return torch._grouped_mm(xs[i], ws[i], offs=offsets)

    rows = []
    t = harness.time_pair(ours, peer, rotate=copies, rounds=rounds)
    ex = dict(
        extra, weight_tbps=wbytes / (t["ours_ms"] * 1e-3) / 1e12, peer_weight_tbps=wbytes / (t["peer_ms"] * 1e-3) / 1e12
    )
    ex.update(harness.timing_fields(t))
    rows.append(
        harness.make_row(
            kernel="grouped_matmul", shape=shape, dtype=dtype_name, peer="torch._grouped_mm", ours_ms=t["ours_ms"],
            peer_ms=t["peer_ms"], flops=flops, nbytes=nbytes, tags=tags, extra=ex,
        )
    )  # fmt: skip
    if loop:
        t2 = harness.time_pair(
            ours, lambda i: loop_matmul(xs[i], ws[i], counts), rotate=copies, rounds=max(1, rounds // 2)
        )
        ex2 = dict(extra, weight_tbps=wbytes / (t2["ours_ms"] * 1e-3) / 1e12)
        rows.append(
            harness.make_row(
                kernel="grouped_matmul", shape=shape, dtype=dtype_name, peer="loop of torch.matmul",
                ours_ms=t2["ours_ms"], peer_ms=t2["peer_ms"], flops=flops, nbytes=nbytes, tags=tags, extra=ex2,
            )
        )  # fmt: skip
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
    return rows


def run(args: argparse.Namespace, progress: Any) -> list[dict[str, Any]]:
    problems = parse_shapes(args.shapes)
    tags = harness.env_tags()
    rows: list[dict[str, Any]] = []
    for label, counts, K, N in progress(problems, total=len(problems), desc="grouped"):
        rows += bench_shape(label, counts, K, N, args.dtype, args.rounds, tags, loop=not args.no_loop)
    return rows
