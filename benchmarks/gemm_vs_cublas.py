"""Every GEMM fixture problem: `tilewise.kernels.gemm.matmul`'s dispatched kernel (the advisor's top-1 across the
Triton and the Gluon kernel) beside cuBLAS (`torch.matmul`), eager and CUDA graphs, alternating rounds.

    python benchmarks/gemm_vs_cublas.py --out benchmarks/results/h200/gemm_vs_cublas.json

The problems are the 152 of tests/data/sweeps/h200/gemm.jsonl (benchmarks/sweeps/problems.py). Each row:
the problem, the plan (`matmul_plan`: kernel, config, reason), ours/cuBLAS median ms eager (L2 flushed by
do_bench before every call) and graph (replays of `rotate` operand copies, so small problems do not find
their operands in L2), `speedup` and `speedup_graph` (cuBLAS / ours). Every kernel is compiled first in
parallel worker processes (the disk cache then serves the timed process).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "sweeps", "h200", "gemm.jsonl")


def problems() -> list[dict]:
    seen, out = set(), []
    with open(FIXTURES) as f:
        for line in f:
            p = json.loads(line)["problem"]
            key = (p["m"], p["n"], p["k"], p["dtype"], p["layout"])
            if key not in seen:
                seen.add(key)
                out.append(p)
    return out


def operands(p: dict, copies: int = 1):
    import torch

    dt = torch.bfloat16 if p["dtype"] == "bf16" else torch.float16
    sets = []
    for _ in range(copies):
        a = torch.randn(p["m"], p["k"], device="cuda", dtype=dt)
        b = (
            torch.randn(p["n"], p["k"], device="cuda", dtype=dt).t()
            if p["layout"] == "nt"
            else torch.randn(p["k"], p["n"], device="cuda", dtype=dt)
        )
        sets.append((a, b))
    return sets


def _warm(p: dict) -> str:
    import torch

    from tilewise.kernels.gemm import matmul

    try:
        ((a, b),) = operands(p)
        matmul(a, b)
        torch.cuda.synchronize()
        return "ok"
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[:200]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", type=int, default=14)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rep-ms", type=float, default=20)
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args(argv)
    import multiprocessing as mp

    probs = problems()[: a.limit or None]
    t0 = time.time()
    with ProcessPoolExecutor(max_workers=a.workers, mp_context=mp.get_context("spawn")) as ex:
        warm = list(ex.map(_warm, probs))
    print(f"compiled {len(probs)} problems in {time.time() - t0:.0f}s; failures: {[w for w in warm if w != 'ok']}",
          flush=True)  # fmt: skip
    import torch

    from tilewise.bench.harness import env_tags, set_cuda_graph, time_pair
    from tilewise.kernels.gemm import matmul, matmul_plan

    meta = env_tags()
    meta["commit"] = os.environ.get("TILEWISE_COMMIT", "")
    meta["method"] = __doc__.strip().splitlines()[0]
    set_cuda_graph(True)
    rows = []
    for p in probs:
        e = 2
        nbytes = (p["m"] * p["k"] + p["k"] * p["n"] + p["m"] * p["n"]) * e
        rotate = 1 if nbytes > 48 * 2**20 else min(8, max(2, (96 * 2**20) // max(nbytes, 1)))
        sets = operands(p, rotate)
        plan = matmul_plan(*sets[0])
        t = time_pair(lambda i, s=sets: matmul(*s[i]), lambda i, s=sets: torch.matmul(*s[i]), rotate=rotate,
                      rounds=a.rounds, rep_ms=a.rep_ms, warmup_ms=5)  # fmt: skip
        row = {"problem": p, "shape": f"{p['m']}x{p['n']}x{p['k']}_{p['dtype']}_{p['layout']}", "plan": plan,
               "rotate": rotate, **t, "speedup": t["peer_ms"] / t["ours_ms"]}  # fmt: skip
        if t.get("ours_graph_ms") and t.get("peer_graph_ms"):
            row["speedup_graph"] = t["peer_graph_ms"] / t["ours_graph_ms"]
        rows.append(row)
        print(f"{row['shape']:28s} {plan['kernel']:6s} {plan['config']:28s} eager {row['speedup']:.3f}x graph "
              f"{row.get('speedup_graph', 0):.3f}x [{time.time() - t0:.0f}s]", flush=True)  # fmt: skip
        del sets
        if len(rows) % 10 == 0:
            _write(a.out, meta, rows)
    _write(a.out, meta, rows)
    return 0


def _write(path, meta, rows):
    g = [r["speedup_graph"] for r in rows if "speedup_graph" in r]
    e = [r["speedup"] for r in rows]
    summary = {
        "problems": len(rows),
        "median_speedup_graph": statistics.median(g) if g else None,
        "min_speedup_graph": min(g) if g else None,
        "below_0.90_graph": sum(x < 0.9 for x in g),
        "median_speedup_eager": statistics.median(e) if e else None,
        "gluon_rows": sum(r["plan"]["kernel"] == "gluon" for r in rows),
    }
    with open(path, "w") as f:
        json.dump({"meta": meta, "summary": summary, "rows": rows}, f, indent=1)
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    sys.exit(main())
