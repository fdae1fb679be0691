#!/usr/bin/env bash
# The mhmoe helper's one device call (issue 16, session 4): MH-MoE host cost rows, the training benchmark, the
# GPU tests of its paths. Everything under $OUT, written as it is measured; each step under its own timeout so
# the whole stays under ~140 s of wall time. Run from the repository root with PYTHONPATH=src.
set -uo pipefail
OUT=${OUT:-/tmp/mhmoe_out}
mkdir -p "$OUT"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/env.txt" 2>&1
lscpu | grep -m1 "Model name" >> "$OUT/env.txt"
timeout 35 python3 -m tilewise.cli bench overhead --ops moe,mhmoe --calls 1000 --rounds 3 \
  --json "$OUT/overhead_mhmoe.json" --rows-out "$OUT/overhead_mhmoe.jsonl" > "$OUT/overhead.log" 2>&1
echo "overhead rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"
timeout 55 python3 benchmarks/mhmoe_train.py --out "$OUT/mhmoe_train.json" --rounds 15 --deadline-s 38 \
  > "$OUT/train.log" 2>&1
echo "train rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"
left=$(( 118 - ($(date +%s) - t0) ))
if [ "$left" -gt 10 ]; then
  timeout "$left" python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_mhmoe_train.py \
    "tests/gpu/test_gpu_custom_ops.py::test_mhmoe_forward_backward_bf16_vs_float64" \
    "tests/gpu/test_gpu_custom_ops.py::test_opcheck_cuda[moe_experts]" \
    tests/gpu/test_gpu_ffn.py::test_mhmoe_forward_bf16 tests/gpu/test_gpu_host_cost.py::test_grouped_moe_ffn_fast_path \
    > "$OUT/tests.log" 2>&1
  echo "tests rc=$? at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"
fi
tail -3 "$OUT/tests.log" 2>/dev/null
cat "$OUT/steps.txt"
