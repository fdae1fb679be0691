"""`tilewise bench SUITE`: run a suite on the GPU, print the table, write JSON rows and a plot."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from types import ModuleType
from typing import Any

import tilewise.bench.suites as pkg
from tilewise.bench import harness, plot
from tilewise.errors import InputError, require_extra


def _suites() -> dict[str, ModuleType]:
    out: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"tilewise.bench.suites.{info.name}")
        if hasattr(mod, "NAME") and hasattr(mod, "run"):
            out[mod.NAME] = mod
    return out


def _progress(iterable: Any, total: int | None = None, desc: str | None = None) -> Any:
    try:
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, file=sys.stderr, dynamic_ncols=True)
    except ImportError:
        return iterable


def _run(a: argparse.Namespace) -> int:
    suite = _suites()[a.suite]
    if hasattr(suite, "check"):  # bad shapes fail here, in one line, before torch or the GPU is looked at
        suite.check(a)
    require_extra("torch", "kernels")
    require_extra("triton", "kernels")
    import torch

    if not torch.cuda.is_available():
        raise InputError("tilewise bench needs a CUDA GPU; none is visible (torch.cuda.is_available() is False)")

    harness.set_cuda_graph(a.cuda_graph)
    rows = suite.run(a, _progress)
    print(harness.format_table(rows))
    if a.json:
        harness.write_rows(a.json, rows, meta=harness.env_tags())
        print(f"wrote {len(rows)} rows to {a.json}", file=sys.stderr)
    if getattr(a, "plot", None):
        plot.roofline_plot(rows, a.plot)
        print(f"wrote {a.plot}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    suites = _suites()
    p = sub.add_parser(
        "bench",
        help="benchmark our kernels side by side with their peers (GPU): " + "|".join(suites),
        description="Ours and the peer alternate in one run on the same inputs; medians of "
        "triton.testing.do_bench with p20/p80; the model's prediction in each row. Every suite takes its "
        "preset shapes or your own (`tilewise bench SUITE --help` shows how).",
        epilog="examples:\n  tilewise bench gemm --shapes 4096x14336x4096 --json rows.json --plot gemm.png\n"
        "  tilewise bench sum --sizes 1G\n"
        "  tilewise bench decode --shapes '8,32,8,32k' --cuda-graph   # GPU time and the host's share per call",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ss = p.add_subparsers(dest="suite", metavar="SUITE", required=True)
    for name, mod in suites.items():
        sp = ss.add_parser(
            name,
            help=getattr(mod, "HELP", ""),
            description=getattr(mod, "HELP", ""),
            epilog=getattr(mod, "EXAMPLES", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        mod.add_arguments(sp)
        sp.add_argument("--json", metavar="FILE", help="write the rows as JSON to FILE")
        sp.add_argument("--plot", metavar="FILE", help="draw a roofline plot of the rows to FILE")
        sp.add_argument(
            "--cuda-graph",
            action="store_true",
            help="also time CUDA-graph replays of both sides (GPU time without the host's per-call cost; "
            "adds ours_graph_ms, peer_graph_ms, speedup_graph, ours_host_ms to each row)",
        )
    p.set_defaults(func=_run)
