"""`tilewise explain KIND`: each kind is a module with `add_arguments(parser)` and `from_args(args) -> Report`."""

from __future__ import annotations

import argparse
import importlib

KINDS = {
    "gemm": ("tilewise.explain.gemm", "a GEMM from grid to Tensor Core (default: the decode GEMM 64x24576x8192)"),
    "attention": ("tilewise.explain.attention", "FlashAttention forward tile sizes on Hopper (FA3, d 128)"),
    "decode": ("tilewise.explain.decode", "decode attention: GQA packing, split-KV, bandwidth-bound time"),
    "moe": ("tilewise.explain.moe", "MoE grouped GEMM: tiles per expert, schedule, prologue/epilogue share"),
    "ffn": ("tilewise.explain.ffn", "FlashFFN: the fused multi-head FFN and why it fits on chip"),
}


def _run(a: argparse.Namespace) -> int:
    kind = a.kind or "gemm"
    mod = importlib.import_module(KINDS[kind][0])
    if a.kind is None:  # `tilewise explain` alone: the decode GEMM with its defaults
        p = argparse.ArgumentParser()
        mod.add_arguments(p)
        ns = p.parse_args([])
    else:
        ns = a
    report = mod.from_args(ns)
    if getattr(a, "json", False):
        print(report.dumps())
    else:
        print(report.render(), end="")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    kinds = KINDS  # every kind ships with tilewise: a module that fails to import is a bug and must show
    p = sub.add_parser(
        "explain",
        help="walk a problem from warps to tile sizes: " + "|".join(kinds),
        description="Explain a concrete problem from warps to tile sizes, every figure computed. "
        "Without a kind: the GEMM C[64, 24576] = A[64, 8192] x B[8192, 24576].",
        epilog="examples:\n  tilewise explain\n  tilewise explain gemm --m 1 --gpu h200\n"
        "  tilewise explain attention --json\n  tilewise explain decode --batch 8 --seq-len 32768",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (keys in the README)")
    ks = p.add_subparsers(dest="kind", metavar="KIND")
    for kind, (mod, text) in kinds.items():
        kp = ks.add_parser(kind, help=text, description=text)
        importlib.import_module(mod).add_arguments(kp)
        kp.add_argument("--json", action="store_true", help="print one JSON object (keys in the README)")
    p.set_defaults(func=_run, kind=None)
