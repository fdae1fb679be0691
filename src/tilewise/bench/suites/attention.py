"""`tilewise bench attention`: tilewise.kernels.attention vs SDPA, side by side.

The peer in `peer_ms` / `speedup` is SDPA as a user calls it (its default backend choice: cuDNN
attention on the H200, which is where the published 613 / 539 TFLOP/s come from); SDPA forced
onto its flash backend (FlashAttention-2) is timed in the same run as `sdpa_flash_ms`.

FLOPs and bytes come from `tilewise.model.traffic` (`attention_flops` with SDPA's causal
convention, half of Sq x Sk pairs, so TFLOP/s compare with the published peers; and
`attention_bytes`). The five headline shapes (`HEADLINE`: B4 H32 S4096 D 128 with and without a causal mask, ...) are
the ones the README quotes; the sweep adds shapes across batch,
heads, sequence length, head dim, causal and GQA.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from tilewise.bench import harness, shapes
from tilewise.model import traffic

DEVICE = "cuda"  # the suites run on the GPU (a CPU smoke test may change it)
NAME = "attention"
HELP = "FlashAttention forward (bf16/fp16) vs SDPA (default and flash backends): 5 headline shapes, a sweep of 12, or your own"

# (B, H, Hkv, S, D, causal)
HEADLINE = [
    (4, 32, 32, 4096, 128, False),
    (4, 32, 32, 4096, 128, True),
    (4, 32, 32, 4096, 64, True),
    (2, 32, 32, 16384, 128, True),
    (16, 16, 16, 1024, 128, True),
]
SWEEP = [
    (8, 32, 32, 2048, 64, False),
    (4, 32, 32, 4096, 64, False),
    (1, 32, 32, 8192, 128, False),
    (1, 32, 32, 8192, 128, True),
    (32, 16, 16, 512, 128, False),
    (32, 16, 16, 512, 128, True),
    (8, 16, 16, 2048, 128, False),
    (4, 32, 32, 1024, 64, True),
    (1, 16, 16, 32768, 128, True),
    (4, 32, 8, 4096, 128, True),  # GQA 4
    (2, 64, 8, 8192, 128, True),  # GQA 8
    (2, 16, 16, 4096, 256, True),  # D = 256
]


shape_name = shapes.attention_name
PRESETS = {"headline": HEADLINE, "sweep": SWEEP, "all": HEADLINE + SWEEP}
EXAMPLES = """examples:
  tilewise bench attention --shapes headline
  tilewise bench attention --shapes '1,32,8,8192,128,1'          # B,H,Hkv,S,D,causal: GQA 32/8, causal
  tilewise bench attention --shapes '8,16,16,2048,64,0;2,64,8,32k,128,1' --cuda-graph"""


def parse_shapes(text: str) -> list[tuple[int, int, int, int, int, bool]]:
    """'headline', 'sweep', 'all' or a list 'B,H,Hkv,S,D,c;...' (c = 0/1)."""
    return shapes.attention(text, PRESETS)


def check(args: argparse.Namespace) -> None:
    """Refuse bad arguments before any GPU work."""
    parse_shapes(args.shapes)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--shapes",
        default="all",
        help="headline | sweep | all, or your own 'B,H,Hkv,S,D,causal[;...]' (causal 0/1; default all)",
    )
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rep-ms", type=float, default=50)
    p.add_argument("--no-check", action="store_true", help="skip the correctness check against SDPA")
    p.add_argument(
        "--no-flash-peer",
        action="store_true",
        help="skip timing SDPA forced onto its flash backend besides its default choice (cuDNN on Hopper)",
    )


def model_spec(
    b: int, h: int, hk: int, s: int, d: int, causal: bool, dtype: str, cfg: Any
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(kernel, problem, config) of `tilewise.model.predict` for a row: the Triton kernel's tile `cfg`."""
    problem = {"batch": b, "heads": h, "kv_heads": hk, "seq_q": s, "seq_k": s, "head_dim": d, "causal": causal,
               "dtype": dtype}  # fmt: skip
    config = {"block_m": cfg.block_m, "block_n": cfg.block_n, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    return "attention", problem, config


# The time model has an attention family for the Triton kernel only; where the Gluon FA3 kernel runs (Hopper,
# fp16/bf16, D 128/256) the row's model_ms is the Triton fallback's prediction and says so.
GLUON_NOTE = "model_ms predicts the Triton kernel's default tile; the Gluon FA3 kernel ran (no model family)"


def run(args: argparse.Namespace, progress: Any) -> list[dict[str, Any]]:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from tilewise.kernels.attention_gluon import use_gluon
    from tilewise.kernels.flash_attention import attention, forward_config

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    problems = parse_shapes(args.shapes)
    tags = harness.env_tags()
    gpu_key = harness.registry_key_for(tags.get("gpu", ""))
    rows: list[dict[str, Any]] = []
    for b, h, hk, s, d, causal in progress(problems, total=len(problems), desc="attention"):
        q = torch.randn(b, h, s, d, device=DEVICE, dtype=dtype)
        k = torch.randn(b, hk, s, d, device=DEVICE, dtype=dtype)
        v = torch.randn(b, hk, s, d, device=DEVICE, dtype=dtype)

        def ours(_i: int, q: Any = q, k: Any = k, v: Any = v, causal: Any = causal) -> Any:
            return attention(q, k, v, causal=causal)

        def peer(_i: int, q: Any = q, k: Any = k, v: Any = v, causal: Any = causal, gqa: Any = hk != h) -> Any:
            # SDPA as a user calls it: its own backend choice (cuDNN attention on the H200 when eligible)
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

        def peer_flash(_i: int, q: Any = q, k: Any = k, v: Any = v, causal: Any = causal, gqa: Any = hk != h) -> Any:
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

        peer_error = None
        peer_fn: Callable[[int], Any] | None = peer
        try:
            ref = peer(0)
        except Exception as e:  # the row keeps our time alone
            peer_error, ref, peer_fn = repr(e)[:200], None, None
        err = None
        if not args.no_check and ref is not None:
            o, _ = ours(0)
            err = (o[:1].float() - ref[:1].float()).abs().max().item()
        t = harness.time_pair(ours, peer_fn, rounds=args.rounds, rep_ms=args.rep_ms, warmup_ms=10)
        flash_ms: float | None = None
        if not args.no_flash_peer:  # the FlashAttention-2 peer: SDPA forced onto its flash backend
            try:
                flash = harness.time_pair(peer_flash, None, rounds=args.rounds, rep_ms=args.rep_ms, warmup_ms=10)
                flash_ms = flash["ours_ms"]
            except Exception as e:
                peer_error = (peer_error or "") + f" flash: {e!r}"[:200]
        cfg = forward_config(d, causal, dtype, s, batch=b, heads=h, kv_heads=hk, seq_k=s, gpu=gpu_key)
        gluon = use_gluon(q, k, v, None, causal)
        row = harness.make_row(
            kernel="attention",
            shape=shape_name(b, h, hk, s, d, causal),
            dtype=args.dtype,
            peer="sdpa(default backend)",
            ours_ms=t["ours_ms"],
            peer_ms=t.get("peer_ms"),
            flops=traffic.attention_flops(b, h, s, s, d, causal=causal, exact_causal=False),
            nbytes=traffic.attention_bytes(b, h, hk, s, s, d, args.dtype),
            tags=tags,
            gpu_key=gpu_key,
            model=model_spec(b, h, hk, s, d, causal, args.dtype, cfg),
            extra={
                "kernel_path": "gluon" if gluon else "triton",
                "model_note": GLUON_NOTE if gluon else None,
                "headline": (b, h, hk, s, d, causal) in HEADLINE,
                "sdpa_flash_ms": flash_ms,
                "speedup_vs_sdpa_flash": (flash_ms / t["ours_ms"]) if flash_ms else None,
                "peer_error": peer_error,
                "max_abs_err_vs_sdpa": err,
                "config": f"BLOCK_M={cfg.block_m} BLOCK_N={cfg.block_n} warps={cfg.num_warps} "
                f"stages={cfg.num_stages} tma={cfg.use_desc}",
                **harness.timing_fields(t),
            },
        )
        rows.append(row)
        if getattr(args, "json", None):  # written after every row: a timeout loses nothing
            harness.write_rows(args.json, rows, meta=tags)
        del q, k, v
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
    return rows
