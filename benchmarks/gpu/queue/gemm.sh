#!/usr/bin/env bash
# Area `gemm` (issue 5), final round: full-size checks (bf16), the benchmark rows (tilewise bench gemm|sum,
# bf16 + fp16 + tf32 rows), then the sweeps that back the heuristic's comments, as long as time is left.
set -u
START=$(date +%s)
el() { echo $(($(date +%s) - START)); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv || true
BUDGET_S=30 SWEEP_NAME=checks python3 benchmarks/gpu/queue/gemm_round2.py --checks --no-sweeps 2>&1 | grep "^check\|Error\|error" | head -40
if [ -e "$OUT_AREA/NO_WS" ]; then echo "warp-specialized check FAILED: benchmarking without it"; export TILEWISE_NO_WARP_SPECIALIZE=1; fi
echo "--- bench gemm (t=$(el)s)"
python3 benchmarks/gpu/queue/gemm_bench.py gemm --shapes all --rounds 3 --rep-ms 40 --json "$OUT_AREA/gemm.json" \
  --command "tilewise bench gemm --shapes all --rounds 3 --rep-ms 40 --json benchmarks/results/h200/gemm.json" \
  2>"$OUT_AREA/gemm_progress.txt" | tail -40
echo "--- bench sum (t=$(el)s)"
python3 benchmarks/gpu/queue/gemm_bench.py sum --rounds 3 --rep-ms 40 --json "$OUT_AREA/sum.json" \
  --command "tilewise bench sum --rounds 3 --rep-ms 40 --json benchmarks/results/h200/sum.json" 2>"$OUT_AREA/sum_progress.txt"
echo "--- bench gemm fp16 / tf32 (t=$(el)s)"
python3 benchmarks/gpu/queue/gemm_bench.py gemm --dtype fp16 --shapes 8192x8192x8192,64x24576x8192,3000x5000x700 \
  --rounds 3 --rep-ms 40 --json "$OUT_AREA/gemm_fp16.json" 2>/dev/null \
  --command "tilewise bench gemm --dtype fp16 --shapes 8192x8192x8192,64x24576x8192,3000x5000x700 --rounds 3 --rep-ms 40 --json benchmarks/results/h200/gemm_fp16.json"
python3 benchmarks/gpu/queue/gemm_bench.py gemm --dtype fp32 --shapes 4096x4096x4096,64x24576x8192,1000x1000x1000 \
  --rounds 3 --rep-ms 40 --json "$OUT_AREA/gemm_tf32.json" 2>/dev/null \
  --command "tilewise bench gemm --dtype fp32 --shapes 4096x4096x4096,64x24576x8192,1000x1000x1000 --rounds 3 --rep-ms 40 --json benchmarks/results/h200/gemm_tf32.json"
LEFT=$((112 - $(el)))
echo "--- sweeps (t=$(el)s, budget ${LEFT}s)"
if [ "$LEFT" -gt 12 ]; then BUDGET_S=$LEFT python3 benchmarks/gpu/queue/gemm_round2.py 2>&1 | grep -v "^ *%\|^ *tt\.\|^ *scf\|^ *arith\|^module\|^{\|^#\|^}" | head -60; fi
echo "--- done (t=$(el)s)"
python3 - <<'PY'
import json, os, statistics
for f in ("gemm.json", "sum.json", "gemm_fp16.json", "gemm_tf32.json"):
    p = os.path.join(os.environ["OUT_AREA"], f)
    if os.path.exists(p):
        rows = json.load(open(p))["rows"]
        sp = [r["speedup"] for r in rows if r.get("speedup")]
        print(f, len(rows), "rows; median speedup %.3f" % statistics.median(sp))
        for r in rows[:7]:
            print("  ", r["shape"], r.get("config", ""), "x%.3f" % r["speedup"], "%.2f TB/s" % r["tbps"], "%.0f TF/s" % r["tflops"])
PY
