"""Session 2: config sweep for the GEMM shapes that stay below 0.8x cuBLAS as CUDA graphs (kernel time, not
host time): can a different tile, pipeline depth or split of K close them? Each config is a captured graph
replayed after do_bench's L2 flush, cuBLAS the same way, beside it. Writes $OUT_AREA/gemm_small_sweep.json."""

import itertools
import json
import os
import time

import torch
from triton.testing import do_bench

from tilewise.kernels.gemm import Config, choose_config, matmul

OUT = os.environ.get("OUT_AREA", "/tmp")
BUDGET = float(os.environ.get("SWEEP_BUDGET", "200"))
t0 = time.time()


def graph_ms(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return do_bench(g.replay, warmup=5, rep=25, return_mode="median")


SHAPES = [
    (1000, 1000, 1000),
    (768, 3072, 768),
    (200, 8192, 8192),
    (96, 12288, 4096),
    (4096, 4096, 256),
    (4000, 4000, 64),
    (2000, 3000, 4000),
    (3072, 3072, 3072),
]
CONFIGS = [
    Config(bm, bn, bk, 8, sk, 4 if bm * bn <= 64 * 128 else 8, st)
    for (bm, bn), bk, st, sk in itertools.product(
        [(64, 64), (64, 128), (128, 128), (128, 256)], [64, 128], [3, 4], [1, 2]
    )
    if not (bk == 128 and bm * bn >= 128 * 256)
]
res = {"configs": len(CONFIGS), "shapes": {}}
for m, n, k in SHAPES:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    ref = a.float() @ b.float()
    cub = graph_ms(lambda a=a, b=b: a @ b)
    default = choose_config(m, n, k, torch.bfloat16, a.device)
    row = {
        "cublas_ms": cub,
        "default": default.tag(),
        "default_ms": graph_ms(lambda a=a, b=b: matmul(a, b)),
        "configs": {},
    }
    for cfg in CONFIGS:
        if time.time() - t0 > BUDGET:
            break
        if cfg.split_k > 1 and k // cfg.block_k < 16:
            continue
        try:
            c = matmul(a, b, config=cfg)
            err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
            if err > 2e-2:
                row["configs"][cfg.tag()] = {"error": f"wrong result: rel err {err:.3g}"}
                continue
            row["configs"][cfg.tag()] = {"ms": graph_ms(lambda cfg=cfg, a=a, b=b: matmul(a, b, config=cfg))}
        except Exception as e:  # smem overflow and the like
            row["configs"][cfg.tag()] = {"error": repr(e)[:160]}
    ok = {t: v["ms"] for t, v in row["configs"].items() if "ms" in v}
    if ok:
        best = min(ok, key=ok.get)
        row["best"], row["best_ms"] = best, ok[best]
        print(
            f"{m}x{n}x{k}: cuBLAS {cub * 1e3:.1f} us, default {row['default']} {row['default_ms'] * 1e3:.1f} us, "
            f"best {best} {ok[best] * 1e3:.1f} us ({len(ok)} configs, {time.time() - t0:.0f}s)",
            flush=True,
        )
    res["shapes"][f"{m}x{n}x{k}"] = row
    json.dump(res, open(os.path.join(OUT, "gemm_small_sweep.json"), "w"), indent=1)
