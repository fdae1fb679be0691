"""`tilewise bench decode`: split-KV decode attention vs SDPA (`enable_gqa=True`), side by side.

Bytes from `tilewise.model.traffic.decode_bytes` (each sequence's K/V read once, plus q and o);
the copy bandwidth is measured in the same run (1 GiB device-to-device copy, read + write) and
every row carries `copy_fraction` = our TB/s over it (the target: 90% of the copy). The variable-length
batch gives SDPA the cache padded to the longest sequence with a boolean mask, which is what a
user of SDPA does; ours reads each sequence's own keys only.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from tilewise.bench import harness, shapes
from tilewise.model import traffic
from tilewise.util import cdiv

DEVICE = "cuda"  # the suites run on the GPU (a CPU smoke test may change it)
NAME = "decode"
HELP = "decode attention (one new token, GQA, split-KV) vs SDPA enable_gqa: 7 preset shapes or your own"

VARLEN = shapes.even_lengths(32, 1024, 65536)  # 32 sequences, 1k .. 64k, evenly spaced
# (name, Hq, Hkv, lengths)
SHAPES = [
    ("B1 Hq32 Hkv8 L128k", 32, 8, [131072]),
    ("B8 Hq32 Hkv8 L32k", 32, 8, [32768] * 8),
    ("B64 Hq32 Hkv8 L4k", 32, 8, [4096] * 64),
    ("B1 Hq64 Hkv8 L64k", 64, 8, [65536]),
    ("B32 Hq32 Hkv8 varlen 1k-64k", 32, 8, VARLEN),
    ("B1 Hq32 Hkv32 L32k", 32, 32, [32768]),
    ("B16 Hq32 Hkv8 L8k", 32, 8, [8192] * 16),
]
EXAMPLES = """examples:
  tilewise bench decode                                 # the 7 preset rows
  tilewise bench decode --shapes 0,4                    # preset rows 0 and 4
  tilewise bench decode --shapes '4,32,8,16k'           # B,Hq,Hkv,L: 4 sequences of 16384 keys, GQA 32/8
  tilewise bench decode --shapes '16,64,8,2k-128k;3,32,8,1000/70000/9000' --head-dim 128 --cuda-graph"""


def parse_shapes(text: str) -> list[tuple[str, int, int, list[int]]]:
    """'all', preset row numbers, or 'B,Hq,Hkv,L;...' (L a length, a range LOW-HIGH or B lengths joined by '/')."""
    return shapes.decode(text, SHAPES)


def check(args: argparse.Namespace) -> None:
    """Refuse bad arguments before any GPU work."""
    parse_shapes(args.shapes)
    shapes.count("--head-dim", "the head dim", args.head_dim)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--shapes",
        default="all",
        help=f"all, preset row numbers 0..{len(SHAPES) - 1} ('0,4'), or your own 'B,Hq,Hkv,L[;...]' where L is one "
        "length (32768 or 32k), a range LOW-HIGH of B evenly spaced lengths, or B lengths joined by '/' (default all)",
    )
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rep-ms", type=float, default=50)
    p.add_argument("--head-dim", type=int, default=128, help="head dim D of q, k and v (default 128)")


def _copy_tbps(torch: Any, do_bench: Any) -> float:
    """Device-to-device copy of 1 GiB, read + write bytes over the median time."""
    src = torch.empty(1 << 29, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), warmup=10, rep=50, return_mode="median")
    return float(2 * src.numel() * src.element_size() / (ms * 1e-3) / 1e12)


def run(args: argparse.Namespace, progress: Any) -> list[dict[str, Any]]:
    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench

    from tilewise.kernels.decode import (
        MAX_CHUNK,
        USE_DESC,
        advised_plan,
        choose_splits,
        decode_attention,
        default_tile,
    )

    problems = parse_shapes(args.shapes)
    d = args.head_dim
    dt = torch.bfloat16
    tags = harness.env_tags()
    copy_tbps = _copy_tbps(torch, do_bench)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows: list[dict[str, Any]] = []
    for name, hq, hk, lens in progress(problems, total=len(problems), desc="decode"):
        b, lmax = len(lens), max(lens)
        q = torch.randn(b, hq, 1, d, device=DEVICE, dtype=dt)
        k = torch.randn(b, hk, lmax, d, device=DEVICE, dtype=dt)
        v = torch.randn_like(k)
        lens_t = torch.tensor(lens, device=DEVICE, dtype=torch.int32)
        uniform = len(set(lens)) == 1
        mask = None if uniform else (torch.arange(lmax, device=DEVICE)[None, :] < lens_t[:, None]).view(b, 1, 1, lmax)

        def ours(_i: int, q: Any = q, k: Any = k, v: Any = v, lens_t: Any = lens_t) -> Any:
            return decode_attention(q, k, v, lens_t)

        def peer_gqa(_i: int, q: Any = q, k: Any = k, v: Any = v, mask: Any = mask) -> Any:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)

        peer: Callable[[int], Any] = peer_gqa

        peer_note = ""
        try:
            ref = peer(0)
        except Exception as e:  # no GQA kernel with a mask: what a user then does is expand K/V per query head
            peer_note = f" (enable_gqa with a mask failed: {e!r}"[:160] + "; K/V expanded instead)"
            kx, vx = k.repeat_interleave(hq // hk, 1), v.repeat_interleave(hq // hk, 1)

            def peer_expanded(_i: int, q: Any = q, kx: Any = kx, vx: Any = vx, mask: Any = mask) -> Any:
                return F.scaled_dot_product_attention(q, kx, vx, attn_mask=mask)

            peer = peer_expanded

            ref = peer(0)
        o, _ = ours(0)
        err = (o.float() - ref.float()).abs().max().item()
        del ref
        t = harness.time_pair(ours, peer, rounds=args.rounds, rep_ms=args.rep_ms, warmup_ms=10)
        nbytes = traffic.decode_bytes(lens, hq, hk, d, "bf16")
        plan = advised_plan(b, hq, hk, max(lmax, 1), d, torch.bfloat16, harness.registry_key_for(tags.get("gpu", "")))
        if plan is not None:  # the kernel's default: the advisor's key tile and split count
            tile, splits = plan[:3], plan[3]
            chunk = cdiv(cdiv(max(lmax, 1), splits), tile[0]) * tile[0]
        else:
            tile = default_tile(d, 2)
            splits, chunk = choose_splits(b, hk, lmax, sms, tile[0])
        problem = {"batch": b, "heads": hq, "kv_heads": hk, "seq_len": max(lmax, 1), "head_dim": d, "dtype": "bf16"}
        if not uniform:  # ragged lengths: the model prices the keys of all sequences, not batch x the longest
            problem["total_keys"] = sum(lens)
        row = harness.make_row(
            kernel="decode_attention",
            shape=name,
            dtype="bf16",
            peer="sdpa(enable_gqa=True)" + ("" if uniform else ", padded to the longest + mask") + peer_note,
            ours_ms=t["ours_ms"],
            peer_ms=t["peer_ms"],
            flops=traffic.decode_flops(lens, hq, d),
            nbytes=nbytes,
            tags=tags,
            model=(
                "decode",
                problem,
                {"block_n": tile[0], "num_warps": tile[1], "num_stages": tile[2], "num_splits": splits},
            ),
            extra={
                "copy_tbps": copy_tbps,
                "copy_fraction": nbytes / (t["ours_ms"] * 1e-3) / 1e12 / copy_tbps,
                "peer_copy_fraction": nbytes / (t["peer_ms"] * 1e-3) / 1e12 / copy_tbps,
                "splits": splits,
                "chunk_keys": chunk,
                "tile": f"BLOCK_N={tile[0]} warps={tile[1]} stages={tile[2]} tma={USE_DESC} max_chunk={MAX_CHUNK}",
                "max_abs_err_vs_sdpa": err,
                "total_keys": sum(lens),
                **harness.timing_fields(t),
            },
        )
        rows.append(row)
        if getattr(args, "json", None):
            harness.write_rows(args.json, rows, meta=tags)
        del q, k, v, mask, peer
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
    return rows
