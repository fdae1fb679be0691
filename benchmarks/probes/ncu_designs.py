"""Nsight Compute counters of the three FA3 designs (serial, ring, ping-pong) at B4 H32 S4096 D128 bf16.

    python benchmarks/probes/ncu_designs.py --out benchmarks/results/h200/attention_fa3_ncu.json

Runs `ncu --clock-control none` (the GPU keeps its own clock, as in the timed runs) over
`benchmarks/attention_fa3.py --ncu-design all`, which launches each design once, and writes one row per
profiled launch: the design, grid, block and the metrics below. Tensor-Core activity is
`sm__pipe_tensor_op_hmma_cycles_active` (wgmma counts as the hmma pipe on sm_90). Needs ncu on PATH and
a Hopper GPU.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys

from common import parser, save

METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
)
HERE = os.path.dirname(os.path.abspath(__file__))


def ncu_command(designs: int = 3) -> list[str]:
    """The profiling command: one launch per design, the kernel matched by name."""
    fa3 = os.path.join(HERE, "..", "attention_fa3.py")
    return [
        "ncu", "--clock-control", "none", "-k", "regex:_fa3_fwd_kernel", "-c", str(designs),
        "--metrics", ",".join(METRICS), "--csv", sys.executable, fa3, "--ncu-design", "all", "--out", "/tmp",
    ]  # fmt: skip


def parse_csv(text: str, designs: list[str]) -> list[dict]:
    """ncu's --csv output (one line per kernel x metric, after its ==PROF== lines) -> one row per launch,
    in launch order, named by `designs`."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    rows: dict[str, dict] = {}
    for rec in csv.DictReader(io.StringIO("\n".join(lines))):
        r = rows.setdefault(rec["ID"], {"kernel": rec["Kernel Name"].split("(")[0], "grid": rec.get("Grid Size"),
                                        "block": rec.get("Block Size")})  # fmt: skip
        value = rec["Metric Value"].replace(",", "")
        try:
            r[rec["Metric Name"]] = float(value)
        except ValueError:
            r[rec["Metric Name"]] = value
    out = []
    for i, key in enumerate(sorted(rows, key=int)):
        out.append({"design_name": designs[i] if i < len(designs) else f"launch {i}", **rows[key]})
    return out


def main() -> int:
    args = parser(__doc__, "benchmarks/results/h200/attention_fa3_ncu.json").parse_args()
    if shutil.which("ncu") is None:
        print("ncu_designs: ncu (Nsight Compute) is not on PATH", file=sys.stderr)
        return 2
    from tilewise.kernels import attention_gluon as ag

    designs = list(ag.DESIGNS)
    r = subprocess.run(ncu_command(len(designs)), capture_output=True, text=True, timeout=600)
    rows = parse_csv(r.stdout, designs)
    if r.returncode != 0 or len(rows) != len(designs):
        print(f"ncu_designs: ncu exited {r.returncode} with {len(rows)} of {len(designs)} launches", file=sys.stderr)
        print(r.stderr[-2000:], file=sys.stderr)
        return 1
    save(args.out, {"shape": "B4 H32 S4096 D128 bf16 non-causal", "command": " ".join(ncu_command(3)), "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
