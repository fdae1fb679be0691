"""`tilewise bench gemm`: tilewise.kernels.matmul against torch.matmul (cuBLAS), side by side.

Rows carry the model's FLOPs and bytes (`tilewise.model.traffic.gemm_flops` / `gemm_bytes`)
and its roofline time. Shapes whose operands fit in a few L2s are rotated through enough
copies that a repetition never finds its inputs in L2.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from tilewise import gpus as _gpus
from tilewise.bench import harness, shapes
from tilewise.bench.shapes import rotation
from tilewise.model import traffic

DEVICE = "cuda"  # the suites run on the GPU (a CPU smoke test may change it)
NAME = "gemm"
HELP = "matmul (bf16/fp16/tf32) vs torch.matmul (cuBLAS): the 64 x 24576 x 8192 decode GEMM and its batches, a sweep of odd ones, or your own"

# The targets: the square case, the skinny M = 64 decode GEMM and the decode-to-prefill family.
TARGETS = [
    (8192, 8192, 8192),
    (64, 24576, 8192),
    (1, 24576, 8192),
    (16, 24576, 8192),
    (128, 24576, 8192),
    (256, 24576, 8192),
    (1024, 24576, 8192),
]
# Odd and everyday shapes: LLM projections (4096 / 11008 / 14336), non-multiples of every
# block size, short K, tall-skinny and wide-flat.
SWEEP = [
    (3000, 5000, 700),
    (48, 11008, 4096),
    (4096, 4096, 4096),
    (2048, 2048, 2048),
    (1024, 1024, 1024),
    (512, 4096, 11008),
    (2048, 14336, 4096),
    (4096, 11008, 4096),
    (8, 4096, 4096),
    (32, 4096, 14336),
    (1000, 1000, 1000),
    (333, 7777, 2049),
    (16384, 1024, 1024),
    (4096, 4096, 256),
    (1, 4096, 4096),
    (96, 12288, 4096),
    (8192, 8192, 1024),
    (2000, 3000, 4000),
    (5000, 5000, 5000),
    (3072, 3072, 3072),
    (768, 3072, 768),
    (4096, 1024, 8192),
    (257, 513, 1025),
    (6144, 6144, 6144),
    (12288, 4096, 4096),
    (4000, 4000, 64),
    (200, 8192, 8192),
    (8192, 2048, 8192),
]
PRESETS = {"targets": TARGETS, "sweep": SWEEP, "all": TARGETS + SWEEP}
EXAMPLES = """examples:
  tilewise bench gemm --shapes targets
  tilewise bench gemm --shapes 4096x14336x4096,1x4096x14336 --dtype fp16
  tilewise bench gemm --shapes 333x7777x2049 --cuda-graph --json my_gemm.json"""


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    """'targets', 'sweep', 'all' or a comma list of MxNxK ('64x24576x8192,3000x5000x700')."""
    return shapes.gemm(text, PRESETS)


def check(args: argparse.Namespace) -> None:
    """Refuse bad arguments before any GPU work."""
    parse_shapes(args.shapes)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--shapes",
        default="all",
        help="targets | sweep | all, or your own MxNxK[,MxNxK...] (default all)",
    )
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"], help="fp32 runs as TF32 on both sides")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds of ours / peer (default 3)")
    p.add_argument("--rep-ms", type=float, default=60, help="do_bench repetition time per round (default 60)")


def run(args: argparse.Namespace, progress: Any) -> list[dict[str, Any]]:

    import torch

    from tilewise.kernels.gemm import Config, choose_config, matmul

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True  # the peer multiplies fp32 as TF32 too, like ours
    tags = harness.env_tags()
    gpu_key = harness.registry_key_for(tags["gpu"])
    l2 = _gpus.get(gpu_key).l2_bytes
    rows = []
    problems = parse_shapes(args.shapes)
    try:
        for m, n, k in progress(problems, total=len(problems), desc="gemm"):
            nbytes = traffic.gemm_bytes(m, n, k, args.dtype)
            rot = rotation(nbytes, l2)
            a = [torch.randn(m, k, device=DEVICE, dtype=dtype) for _ in range(rot)]
            b = [torch.randn(k, n, device=DEVICE, dtype=dtype) for _ in range(rot)]
            cfg = choose_config(m, n, k, args.dtype, a[0].device)

            def ours(i: int, a: list[Any] = a, b: list[Any] = b, cfg: Config = cfg) -> object:
                return matmul(a[i], b[i], config=cfg)

            def peer(i: int, a: list[Any] = a, b: list[Any] = b) -> object:
                return torch.matmul(a[i], b[i])

            t = harness.time_pair(
                ours,
                peer,
                rotate=rot,
                rounds=args.rounds,
                rep_ms=args.rep_ms,
            )
            rows.append(
                harness.make_row(
                    kernel="matmul",
                    shape=f"{m}x{n}x{k}",
                    dtype=args.dtype,
                    peer="torch.matmul (cuBLAS)",
                    ours_ms=t["ours_ms"],
                    peer_ms=t["peer_ms"],
                    flops=traffic.gemm_flops(m, n, k),
                    nbytes=nbytes,
                    tags=tags,
                    gpu_key=gpu_key,
                    model_dtype="tf32" if args.dtype == "fp32" else args.dtype,
                    model=("gemm", {"m": m, "n": n, "k": k, "dtype": args.dtype}, _config_dict(cfg)),
                    extra={
                        "config": cfg.tag(),
                        "reason": cfg.reason,
                        "rotate": rot,
                        **harness.timing_fields(t),
                    },
                )
            )
            a.clear()  # free this shape's inputs before the next one
            b.clear()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    return rows


def _config_dict(cfg: Any) -> dict[str, Any]:
    """A kernels.gemm.Config as the time model's config dict (every knob, no reason)."""
    return {k: v for k, v in dataclasses.asdict(cfg).items() if k != "reason"}
