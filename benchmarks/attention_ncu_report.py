"""Nsight Compute's tensor-pipe utilisation of the Gluon FA3 forward beside the time model's (CPU only).

    ncu --clock-control none -k regex:_fa3_fwd_kernel -c 3 --csv --metrics \
        gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed \
        python3 benchmarks/attention_sweep.py --part ncu > ncu.csv          # on the GPU: one launch per problem
    python benchmarks/attention_ncu_report.py ncu.csv --commit SHA \
        --out benchmarks/results/h200/attention_ncu_tensor_pipe.json        # here: the rows beside the model

The problems are `attention_sweep.NCU_PROBLEMS`, launched in that order. The model's figures: the kernel's time
from `tilewise.model.pipeline.persistent_forward_ms` on its busiest CTA (`attention_sweep_report.gluon_busiest`: the
config `attention_gluon.shape_config` picks), and its tensor pipe busy for that CTA's key tiles x 2 consumers x
`kernel_tile_times(...).mma` cycles out of the predicted time at `FORWARD_CLOCK_MHZ` (wgmma counts on the hmma
pipe on sm_90, so that is the counter read).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import sys

from tilewise.model import pipeline

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention_sweep import NCU_PROBLEMS  # the launch list lives with the launcher
from attention_sweep_report import gluon_busiest

TENSOR = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
CONSUMERS = 2  # two consumer warpgroups per CTA, each with its 64-row block's Q K^T and P V per key tile


def model_row(b: int, h: int, hk: int, s: int, d: int, causal: bool, dt: str) -> dict:
    cfg, kt, nt = gluon_busiest(b, h, s, d, causal, dt)
    ms = pipeline.persistent_forward_ms(kt, nt, s, d, cfg.block_n, cfg.stages, dt, "h200")
    hit = 1 - 1 / max(1, -(-s // 128))  # as persistent_forward_ms: a head's K/V from HBM once
    mma = pipeline.kernel_tile_times(d, cfg.block_n, 64, dt, hit, "h200").mma
    busy = kt * CONSUMERS * mma / (ms * 1e-3 * pipeline.FORWARD_CLOCK_MHZ * 1e6)
    return {"model_ms": ms, "model_tensor_pct": 100 * busy, "block_n": cfg.block_n, "stages": cfg.stages,
            "busiest_key_tiles": kt, "busiest_tiles": nt}  # fmt: skip


def read_ncu(path: str) -> dict[int, dict[str, float]]:
    """{launch id: {metric: value}} from ncu's --csv output (its ==PROF== lines skipped)."""
    with open(path, encoding="utf-8") as f:
        lines = [ln for ln in f if ln.startswith('"')]
    out: dict[int, dict[str, float]] = {}
    for r in csv.DictReader(lines):
        out.setdefault(int(r["ID"]), {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", required=True, help="the commit the GPU run was made at")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    ap.add_argument("--torch", default="2.11.0+cu130")
    ap.add_argument("--triton", default="3.6.0")
    ap.add_argument("--cpu", default="Intel(R) Xeon(R) Processor")
    a = ap.parse_args()
    ncu = read_ncu(a.csv)
    if len(ncu) != len(NCU_PROBLEMS):
        sys.exit(f"attention_ncu_report: {len(NCU_PROBLEMS)} launches expected in {a.csv}, found {len(ncu)}")
    command = ("ncu --clock-control none -k regex:_fa3_fwd_kernel -c 3 --csv --metrics gpu__time_duration.sum,"
               f"sm__cycles_elapsed.avg.per_second,{TENSOR} python3 benchmarks/attention_sweep.py --part ncu")  # fmt: skip
    tags = {"gpu": "NVIDIA H200", "date": a.date, "torch": a.torch, "triton": a.triton, "cpu": a.cpu,
            "command": command, "commit": a.commit, "dirty": False}  # fmt: skip
    rows = []
    for i, (b, h, hk, s, d, causal, dt) in enumerate(NCU_PROBLEMS):
        m, got = model_row(b, h, hk, s, d, causal, dt), ncu[i]
        shape = f"B{b} H{h}{'' if hk == h else f'/{hk}'} S{s} D{d} {'causal' if causal else 'non-causal'}"
        rows.append({"kernel": "_fa3_fwd_kernel", "shape": shape, "dtype": dt,
                     "ncu_ms": got["gpu__time_duration.sum"] * 1e-6,
                     "ncu_sm_clock_ghz": got["sm__cycles_elapsed.avg.per_second"] * 1e-9,
                     "ncu_tensor_pct": got[TENSOR], **m, **tags})  # fmt: skip
    meta = {**tags, "reproduce": f"python benchmarks/attention_ncu_report.py {a.csv} --commit {a.commit} --out {a.out}",
            "note": "ncu.csv from the command above on the H200 (one launch per problem, clocks not locked)"}  # fmt: skip
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
        f.write("\n")
    for r in rows:
        print(f"{r['shape']:32s} ncu {r['ncu_ms']:.3f} ms {r['ncu_tensor_pct']:5.1f}% at {r['ncu_sm_clock_ghz']:.2f} GHz"
              f" | model {r['model_ms']:.3f} ms {r['model_tensor_pct']:5.1f}%")  # fmt: skip


if __name__ == "__main__":
    main()
