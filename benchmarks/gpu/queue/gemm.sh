#!/usr/bin/env bash
# Area `gemm` (issue 5), round 2: checks of the new paths, the benchmark rows (tilewise bench gemm|sum), then sweeps.
set -u
START=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv || true
BUDGET_S=10 SWEEP_NAME=checks python3 benchmarks/gpu/queue/gemm_round2.py --checks --no-sweeps 2>&1 | grep -v "^  \|^==" | head -20
echo "--- bench gemm (t=$(($(date +%s) - START))s)"
python3 benchmarks/gpu/queue/gemm_bench.py gemm --shapes all --rounds 3 --rep-ms 40 --json "$OUT_AREA/gemm.json" \
  --command "tilewise bench gemm --shapes all --rounds 3 --rep-ms 40 --json benchmarks/results/h200/gemm.json" 2>"$OUT_AREA/gemm_progress.txt"
echo "--- bench sum (t=$(($(date +%s) - START))s)"
python3 benchmarks/gpu/queue/gemm_bench.py sum --rounds 3 --rep-ms 40 --json "$OUT_AREA/sum.json" \
  --command "tilewise bench sum --rounds 3 --rep-ms 40 --json benchmarks/results/h200/sum.json" 2>"$OUT_AREA/sum_progress.txt"
LEFT=$((140 - ($(date +%s) - START)))
echo "--- sweeps (t=$(($(date +%s) - START))s, budget ${LEFT}s)"
BUDGET_S=$LEFT python3 benchmarks/gpu/queue/gemm_round2.py
echo "--- done (t=$(($(date +%s) - START))s)"
python3 - <<'PY'
import json, os, statistics
for f in ("gemm.json", "sum.json"):
    p = os.path.join(os.environ["OUT_AREA"], f)
    if os.path.exists(p):
        rows = json.load(open(p))["rows"]
        sp = [r["speedup"] for r in rows if r.get("speedup")]
        print(f, len(rows), "rows; median speedup %.3f" % statistics.median(sp))
        for r in rows[:7] if f == "gemm.json" else rows:
            print("  ", r["shape"], r.get("config", ""), "x%.3f" % r["speedup"], "%.2f TB/s" % r["tbps"], "%.0f TF/s" % r["tflops"])
PY
