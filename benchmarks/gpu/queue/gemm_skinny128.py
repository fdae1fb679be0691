"""Session 2: for memory-bound GEMMs with 64 < M <= 128 and too few 128x256 tiles to fill the SMs, is a
64x64 tile (more programs, more bytes in flight) better than the 128x128 tile the heuristic takes?
The small-shape sweep found it so on 96x12288x4096 (40.7 vs 47.2 us); this checks four more shapes.
CUDA-graph replays, cuBLAS beside; writes $OUT_AREA/gemm_skinny128.json."""

import json
import os

import torch
from triton.testing import do_bench

from tilewise.kernels.gemm import SKINNY_128_FEW, Config, choose_config, matmul

OUT = os.environ.get("OUT_AREA", "/tmp")


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
    return do_bench(g.replay, warmup=5, rep=40, return_mode="median")


CANDS = {
    "128x128 w8 st3 (now)": SKINNY_128_FEW,
    "64x64 w4 st4": Config(64, 64, 64, 8, 1, 4, 4),
    "64x128 w4 st4": Config(64, 128, 64, 8, 1, 4, 4),
    "64x64 w4 st3": Config(64, 64, 64, 8, 1, 4, 3),
}
rows = []
for m, n, k in [(96, 12288, 4096), (80, 8192, 4096), (128, 11008, 4096), (72, 16384, 2048), (112, 6144, 8192)]:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    ref = a.float() @ b.float()
    row = {
        "shape": f"{m}x{n}x{k}",
        "default": choose_config(m, n, k, torch.bfloat16, a.device).tag(),
        "cublas_ms": graph_ms(lambda a=a, b=b: a @ b),
    }
    for name, cfg in CANDS.items():
        c = matmul(a, b, config=cfg)
        row[name] = {
            "ms": graph_ms(lambda cfg=cfg, a=a, b=b: matmul(a, b, config=cfg)),
            "rel_err": ((c.float() - ref).abs().max() / ref.abs().max()).item(),
        }
    rows.append(row)
    print(json.dumps(row), flush=True)
json.dump(rows, open(os.path.join(OUT, "gemm_skinny128.json"), "w"), indent=1)
