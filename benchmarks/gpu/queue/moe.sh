#!/usr/bin/env bash
# Area moe (issue 7), final round: MoE correctness at full width (bf16, fp16), the benchmark
# rows ($OUT_AREA/grouped.json, moe.json: `tilewise bench grouped` and `tilewise bench moe`
# with the tuned defaults), the CPU cost per call, a last MoE config comparison, then the GPU tests.
set -u
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD/src:$PWD/benchmarks/gpu/queue:${PYTHONPATH:-}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton-moe}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
python3 benchmarks/gpu/queue/moe_gpu.py --budget 75 --phases m,b,l,p,x --profile qwen3_t512
left=$((112 - SECONDS))
if [ "$left" -gt 15 ] && python3 -c "import pytest" 2>/dev/null; then
  echo "== GPU tests (${left}s left)"
  timeout "$left" python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_moe.py 2>&1 | tail -15
else
  echo "== GPU tests skipped (${left}s left, or no pytest)"
fi
