"""Gluon GEMM probe: every config of a list checked element-wise against float64, then timed beside cuBLAS
and the Triton kernel (`tilewise.kernels.gemm.matmul`'s default config) on a few shapes.

    python benchmarks/gemm_gluon_probe.py --out probe.json [--configs gco128x256x64_g8_st3,...] [--shapes ...]

Compiles every (config, layout, epilogue) it will run in parallel worker processes first (the disk cache
then serves the timed process). Timing: `tilewise.bench.harness.time_pair` (alternating rounds, L2 flushed
by do_bench before each eager call; CUDA graphs beside eager).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor

_TAG = re.compile(r"^g(co|pp|sg)(\d+)x(\d+)x(\d+)_g(\d+)_st(\d+)$")
_SCHED = {"co": "cooperative", "pp": "pingpong", "sg": "single"}

DEFAULT_CONFIGS = (
    "gco128x256x64_g8_st3",
    "gco128x128x64_g8_st4",
    "gco128x128x64_g8_st6",
    "gco256x128x64_g8_st3",
    "gco128x256x64_g1_st3",
    "gsg64x128x64_g8_st6",
    "gsg64x256x64_g8_st4",
    "gsg128x128x64_g8_st4",
    "gpp128x128x64_g8_st4",
    "gpp64x256x64_g8_st4",
)
DEFAULT_SHAPES = (
    "8192x8192x8192_nn",
    "4096x4096x4096_nn",
    "1000x1000x1000_nn",
    "3000x1000x2000_nn",
    "64x24576x8192_nt",
    "128x28672x4096_nt",
    "5000x5000x5000_nn",
    "5000x5000x5000_nnp",
    "2000x3000x4000_nn",
    "1536x1536x1536_nn",
    "384x6144x4096_nt",
    "1x28672x4096_nt",
    "8192x8192x8192_nt",
    "2048x6144x4096_nt",
)


def parse_cfg(tag: str):
    from tilewise.kernels.gemm_gluon import GluonGemmConfig

    s, bm, bn, bk, g, st = _TAG.match(tag).groups()
    return GluonGemmConfig(int(bm), int(bn), int(bk), int(st), _SCHED[s], int(g))


def parse_shape(s: str):
    dims, layout = s.split("_")
    m, n, k = (int(x) for x in dims.split("x"))
    return m, n, k, layout


def operands(m, n, k, layout, dtype, seed=0):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=dtype, generator=g)
    if layout == "nt":
        b = torch.randn(n, k, device="cuda", dtype=dtype, generator=g).t()
    else:
        b = torch.randn(k, n, device="cuda", dtype=dtype, generator=g)
    if layout == "nnp":  # the same values in rows padded to a 128-byte pitch (the misaligned-rows A/B)
        a, b = padded(a), padded(b)
    return a, b


def padded(t):
    import torch

    rows, cols = t.shape
    buf = torch.empty((rows, -(-cols // 64) * 64), dtype=t.dtype, device=t.device)
    view = buf[:, :cols]
    view.copy_(t)
    return view


def _warm(job):
    """Compile one (config, layout, bias, activation) by running it once on a small problem."""
    import torch

    from tilewise.kernels.gemm_gluon import gluon_matmul

    tag, layout, has_bias, act = job
    cfg = parse_cfg(tag)
    t = time.time()
    try:
        a, b = operands(256, 256, 128, layout, torch.bfloat16)
        bias = torch.randn(256, device="cuda", dtype=torch.bfloat16) if has_bias else None
        gluon_matmul(a, b, cfg, bias=bias, activation=act)
        torch.cuda.synchronize()
        return job, f"ok {time.time() - t:.1f}s"
    except Exception as e:  # reported, the probe goes on
        return job, f"FAIL {type(e).__name__}: {str(e)[:300]}"


def reference(a, b, bias, act):
    import torch

    ref = a.double() @ b.double()
    if bias is not None:
        ref = ref + bias.double()
    if act == "relu":
        ref = ref.relu()
    elif act == "gelu":
        ref = torch.nn.functional.gelu(ref, approximate="tanh")
    elif act == "silu":
        ref = torch.nn.functional.silu(ref)
    return ref


def check(cfg, m, n, k, layout, has_bias, act):
    """Max excess of |c - ref| over the bound 16 K 2^-24 + 2^-7 |ref| (<= 0: every element within it)."""
    import torch

    from tilewise.kernels.gemm_gluon import gluon_matmul

    a, b = operands(m, n, k, layout, torch.bfloat16, seed=m + n + k)
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16) if has_bias else None
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gluon_matmul(a, b, cfg, out=c, bias=bias, activation=act)
    ref = reference(a, b, bias, act)
    bound = 16 * k * 2.0**-24 + 2.0**-7 * ref.abs() + 1e-6
    err = (c.double() - ref).abs()
    bad = ~(err <= bound)
    return int(bad.sum().item()), float(err.max().item())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS))
    ap.add_argument("--shapes", default=",".join(DEFAULT_SHAPES))
    ap.add_argument("--workers", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=40)
    a = ap.parse_args(argv)
    import torch

    from tilewise.bench.harness import env_tags, set_cuda_graph, time_pair
    from tilewise.kernels.gemm import matmul
    from tilewise.kernels.gemm_gluon import GluonGemmConfig, gluon_matmul, smem_bytes

    tags = [t for t in a.configs.split(",") if t]
    limit = 232448 - 1024
    tags = [t for t in tags if smem_bytes(parse_cfg(t)) <= limit]
    shapes = [parse_shape(s) for s in a.shapes.split(",") if s]
    checks = [(1000, 1000, 1000, "nn", False, "none"), (127, 4104, 4096, "nt", True, "gelu"),
              (1, 4096, 16, "nn", True, "relu"), (4097, 1000, 72, "nt", True, "silu"),
              (3000, 2000, 1000, "nn", False, "none"), (2048, 4096, 1024, "nt", True, "gelu")]  # fmt: skip
    jobs = sorted({(t, lay, hb, act) for t in tags for (_, _, _, lay, hb, act) in checks}
                  | {(t, lay.rstrip("p"), False, "none") for t in tags for (*_, lay) in shapes})  # fmt: skip
    t0 = time.time()
    import multiprocessing as mp

    with ProcessPoolExecutor(max_workers=a.workers, mp_context=mp.get_context("spawn")) as ex:
        warm = dict(ex.map(_warm, jobs))
    print(f"compiled {len(jobs)} kernels in {time.time() - t0:.0f}s", flush=True)
    for j, r in warm.items():
        if not r.startswith("ok"):
            print("  ", j, r, flush=True)
    out = {"meta": env_tags(), "compile": {"/".join(map(str, j)): r for j, r in warm.items()}, "checks": [], "rows": []}
    out["meta"]["commit"] = os.environ.get("TILEWISE_COMMIT", "")
    for t in tags:
        cfg = parse_cfg(t)
        for m, n, k, lay, hb, act in checks:
            if not warm.get((t, lay, hb, act), "").startswith("ok"):
                continue
            try:
                nbad, emax = check(cfg, m, n, k, lay, hb, act)
            except Exception as e:
                nbad, emax = -1, str(e)[:200]
            out["checks"].append({"config": t, "shape": f"{m}x{n}x{k}_{lay}", "bias": hb, "act": act, "bad": nbad,
                                  "max_err": emax})  # fmt: skip
            print(f"check {t} {m}x{n}x{k} {lay} bias={hb} {act}: bad={nbad} max_err={emax}", flush=True)
    print(f"checks done at {time.time() - t0:.0f}s", flush=True)
    set_cuda_graph(True)
    for m, n, k, lay in shapes:
        a_, b_ = operands(m, n, k, lay, torch.bfloat16)
        flops = 2 * m * n * k
        base = time_pair(lambda i, a_=a_, b_=b_: matmul(a_, b_), lambda i, a_=a_, b_=b_: torch.matmul(a_, b_), rounds=a.rounds, rep_ms=a.rep_ms,
                         warmup_ms=10)  # fmt: skip
        row = {"shape": f"{m}x{n}x{k}_{lay}", "cublas_ms": base["peer_ms"], "cublas_graph_ms": base.get("peer_graph_ms"),
               "triton_ms": base["ours_ms"], "triton_graph_ms": base.get("ours_graph_ms"), "gluon": {}}  # fmt: skip
        for t in tags:
            if not warm.get((t, lay.rstrip("p"), False, "none"), "").startswith("ok"):
                continue
            cfg = parse_cfg(t)
            try:
                r = time_pair(lambda i, cfg=cfg, a_=a_, b_=b_: gluon_matmul(a_, b_, cfg), None, rounds=a.rounds, rep_ms=a.rep_ms,
                              warmup_ms=10)  # fmt: skip
                row["gluon"][t] = {"ms": r["ours_ms"], "graph_ms": r.get("ours_graph_ms")}
            except Exception as e:
                row["gluon"][t] = {"error": str(e)[:200]}
        cg = row["cublas_graph_ms"] or row["cublas_ms"]
        best = (
            min((v.get("graph_ms") or math.inf, t) for t, v in row["gluon"].items()) if row["gluon"] else (math.inf, "")
        )
        row["best_gluon"] = best[1]
        row["best_speedup_graph"] = cg / best[0] if best[0] < math.inf else None
        row["triton_speedup_graph"] = cg / (row["triton_graph_ms"] or row["triton_ms"])
        out["rows"].append(row)
        print(
            f"{row['shape']}: cuBLAS {cg * 1e3:.1f} us ({flops / cg / 1e9:.0f} TF/s), triton "
            f"{row['triton_speedup_graph']:.3f}x, best gluon {best[1]} {row['best_speedup_graph'] or 0:.3f}x "
            f"({flops / best[0] / 1e9:.0f} TF/s) [{time.time() - t0:.0f}s]",
            flush=True,
        )
        for t, v in row["gluon"].items():
            if v.get("graph_ms"):
                print(f"    {t}: {v['graph_ms'] * 1e3:.1f} us = {cg / v['graph_ms']:.3f}x", flush=True)
            else:
                print(f"    {t}: {v}", flush=True)
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    _ = GluonGemmConfig
    return 0


if __name__ == "__main__":
    sys.exit(main())
