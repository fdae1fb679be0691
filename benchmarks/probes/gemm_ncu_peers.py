"""Nsight Compute driver: the Gluon GEMM (data-parallel and stream-K) beside cuBLAS on three shapes, one launch
each inside the NVTX range "go" (every kernel is compiled and warmed before it).

    M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,...
    ncu --clock-control none --nvtx --nvtx-include "go/" --metrics "$M" --csv \
        python3 benchmarks/probes/gemm_ncu_peers.py > ncu.csv

(the metric list is in benchmarks/results/h200/gemm_ncu_peers.json's meta.command). Shapes: 384 x 6144 x 4096
nt (skinny: 72 tiles of 128 x 256 on 132 SMs), 2000 x 3000 x 4000 nn (awkward: rows 16- but not 128-byte
aligned), 8192^3 nn (large).
"""

import torch

from tilewise.kernels.gemm_gluon import GluonGemmConfig, gluon_matmul

CO256 = GluonGemmConfig(128, 256, 64, 3, "cooperative")
RUNS = [
    ((384, 6144, 4096, "nt"), CO256),
    ((384, 6144, 4096, "nt"), GluonGemmConfig(128, 256, 64, 3, "cooperative", stream_k=True)),
    ((384, 6144, 4096, "nt"), GluonGemmConfig(128, 128, 64, 4, "cooperative", stream_k=True)),
    ((384, 6144, 4096, "nt"), None),  # None: cuBLAS (torch.matmul)
    ((2000, 3000, 4000, "nn"), CO256),
    ((2000, 3000, 4000, "nn"), None),
    ((8192, 8192, 8192, "nn"), CO256),
    ((8192, 8192, 8192, "nn"), None),
]


def main() -> None:
    runs = []
    for (m, n, k, layout), cfg in RUNS:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        if layout == "nt":
            b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
        else:
            b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        runs.append((a, b, cfg))
        if cfg is not None:
            gluon_matmul(a, b, cfg)  # compile and warm, outside the profiled range
        else:
            torch.matmul(a, b)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("go")
    for a, b, cfg in runs:
        if cfg is None:
            torch.matmul(a, b)
        else:
            gluon_matmul(a, b, cfg)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    main()
