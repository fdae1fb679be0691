"""Nsight Compute driver: the Gluon GEMM (data-parallel, stream-K, the 192 x 128 three-consumer tile) beside cuBLAS,
one launch each inside the NVTX range "go" (every kernel is compiled and warmed before it), and the converter of
its CSV to rows with the model's prediction beside each.

    M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,...
    ncu --clock-control none --nvtx --nvtx-include "go/" --metrics "$M" --csv \\
        python3 benchmarks/probes/gemm_ncu_peers.py > ncu.csv
    python3 benchmarks/probes/gemm_ncu_peers.py --csv ncu.csv --out gemm_ncu_peers.json   # no GPU needed

(the metric list is METRICS below and benchmarks/results/h200/gemm_ncu_peers.json's meta.command). Shapes:
384 x 6144 x 4096 nt (skinny: 72 tiles of 128 x 256 on 132 SMs, 96 of 192 x 128), 2000 x 3000 x 4000 nn (awkward:
rows 16- but not 128-byte aligned; 192 tiles of 128 x 256 = 1.45 waves, 264 of 192 x 128 = 2 full waves),
1536^3 nn (72 tiles of 128 x 256, 96 of 192 x 128), 8192^3 nn (large).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))

from tilewise.kernels.gemm_gluon import GluonGemmConfig  # noqa: E402

METRICS = (
    "gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,"
    "lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,"
    "dram__bytes_read.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,"
    "l1tex__m_xbar2l1tex_read_bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,"
    "lts__average_gcomp_input_sector_success_rate.pct,launch__grid_size"
)
CO256 = GluonGemmConfig(128, 256, 64, 3, "cooperative")
CO192 = GluonGemmConfig(192, 128, 64, 5, "cooperative", epilogue_parts=2)
RUNS = [
    ((384, 6144, 4096, "nt"), CO256),
    ((384, 6144, 4096, "nt"), GluonGemmConfig(128, 256, 64, 3, "cooperative", stream_k=True)),
    ((384, 6144, 4096, "nt"), GluonGemmConfig(128, 128, 64, 4, "cooperative", stream_k=True)),
    ((384, 6144, 4096, "nt"), CO192),
    ((384, 6144, 4096, "nt"), None),  # None: cuBLAS (torch.matmul)
    ((2000, 3000, 4000, "nn"), CO256),
    ((2000, 3000, 4000, "nn"), CO192),
    ((2000, 3000, 4000, "nn"), None),
    ((1536, 1536, 1536, "nn"), CO256),
    ((1536, 1536, 1536, "nn"), CO192),
    ((1536, 1536, 1536, "nn"), None),
    ((8192, 8192, 8192, "nn"), CO256),
    ((8192, 8192, 8192, "nn"), CO192),
    ((8192, 8192, 8192, "nn"), None),
]


def run() -> None:
    import torch

    from tilewise.kernels.gemm_gluon import gluon_matmul

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


def convert(path: str, meta: dict) -> dict:
    """ncu's CSV (one row per kernel and metric, kernels in launch order) -> one row per run of RUNS, the model's
    prediction (`tilewise.model.predict.gemm_gluon`) beside each Gluon run."""
    from tilewise.model.predict import gemm_gluon

    by_id: dict[str, dict] = {}
    with open(path) as f:
        lines = [x for x in f if x.startswith('"')]  # ncu prints its own log lines before the table
    for r in csv.DictReader(lines):
        k = by_id.setdefault(r["ID"], {"kernel": r["Kernel Name"].split("(")[0].strip()})
        v = r["Metric Value"].replace(",", "")
        k[r["Metric Name"]] = float(v) if v.replace(".", "", 1).isdigit() else v
    kernels = [by_id[i] for i in sorted(by_id, key=int)]
    if len(kernels) != len(RUNS):
        raise SystemExit(f"gemm_ncu_peers: expected {len(RUNS)} profiled kernels (one per run), got {len(kernels)}")
    rows = []
    for ((m, n, k, layout), cfg), row in zip(RUNS, kernels):
        shape = f"{m}x{n}x{k}_bf16_{layout}"
        out = {"shape_config": f"{shape} {cfg.tag() if cfg else 'cublas'}", **row, **meta}
        if cfg is not None:
            p = gemm_gluon({"m": m, "n": n, "k": k, "dtype": "bf16", "layout": layout}, cfg.as_dict())
            out.update(model_binding=p.binding, model_ms=p.ms, model_tensor_core_share=p.terms["tensor_core"] / p.ms)
        rows.append(out)
    return {"meta": meta, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=None, help="convert this ncu CSV instead of running (no GPU needed)")
    ap.add_argument("--out", default=None, help="--csv: the JSON rows file to write")
    ap.add_argument("--meta", default=None, help="--csv: a JSON file of meta fields (gpu, date, versions, commit)")
    a = ap.parse_args(argv)
    if a.csv is None:
        run()
        return 0
    for flag, path in (("--csv", a.csv), ("--meta", a.meta)):
        if path and not os.path.isfile(path):
            print(f"gemm_ncu_peers: {flag} expects an existing file, got {path!r}", file=sys.stderr)
            return 2
    with open(a.meta) if a.meta else contextlib.nullcontext(None) as f:
        meta = json.load(f) if f else {}
    doc = convert(a.csv, meta)
    text = json.dumps(doc, indent=1) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
