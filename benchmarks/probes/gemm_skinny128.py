"""For memory-bound GEMMs with 64 < M <= 128 and too few 128x256 tiles to fill the SMs: is a 64-row tile (more
programs, more bytes in flight) faster than 128x128? The check behind `tilewise.kernels.gemm`'s rule for
those shapes. CUDA-graph replays, cuBLAS (`a @ b`) beside them on the same inputs.

    python benchmarks/probes/gemm_skinny128.py --out benchmarks/results/h200/gemm_skinny128.json

The first candidate is the 128x128 w8 st3 tile the heuristic took before the rule changed; `default` is what
`choose_config` takes today.
"""

import json

import torch
from common import graph_ms, parser, save

from tilewise.kernels.gemm import Config, choose_config, matmul

CANDS = {
    "128x128 w8 st3": Config(block_m=128, block_n=128, block_k=64, group_m=8, split_k=1, num_warps=8, num_stages=3),
    "64x64 w4 st4": Config(block_m=64, block_n=64, block_k=64, group_m=8, split_k=1, num_warps=4, num_stages=4),
    "64x128 w4 st4": Config(block_m=64, block_n=128, block_k=64, group_m=8, split_k=1, num_warps=4, num_stages=4),
    "64x64 w4 st3": Config(block_m=64, block_n=64, block_k=64, group_m=8, split_k=1, num_warps=4, num_stages=3),
}
SHAPES = [(96, 12288, 4096), (80, 8192, 4096), (128, 11008, 4096), (72, 16384, 2048), (112, 6144, 8192)]


def main() -> None:
    args = parser(__doc__, "benchmarks/results/h200/gemm_skinny128.json").parse_args()
    rows = []
    for m, n, k in SHAPES:
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
        save(args.out, rows)


if __name__ == "__main__":
    main()
