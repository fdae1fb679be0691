#!/usr/bin/env bash
# Area moe (issue 7), round 2: correctness at full size (bf16), per-kernel profile of the MoE
# layer (ours vs torch), MoE config sweep, grouped GEMM sweep (schedules map / search / inline,
# 2 programs per SM), then the benchmark rows ($OUT_AREA/grouped.json, moe.json) and, if time
# is left, the GPU tests.
set -u
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD/src:$PWD/benchmarks/gpu/queue:${PYTHONPATH:-}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton-moe}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
python3 benchmarks/gpu/queue/moe_gpu.py --budget 105 --phases c,p,x,s,b
left=$((138 - SECONDS))
if [ "$left" -gt 20 ] && python3 -c "import pytest" 2>/dev/null; then
  echo "== GPU tests (${left}s left)"
  timeout "$left" python3 -m pytest -q -x -p no:cacheprovider -m gpu tests/gpu/test_gpu_moe.py 2>&1 | tail -15
else
  echo "== GPU tests skipped (${left}s left, or no pytest)"
fi
