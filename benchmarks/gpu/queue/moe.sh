#!/usr/bin/env bash
# Area moe (issue 7): full-size correctness (bf16 + fp16), config sweep vs torch._grouped_mm
# (binary search vs tile map, swap, TMA, flatten), MoE layer timing. Writes $OUT_AREA/moe_round.json.
set -u
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD/src:${PYTHONPATH:-}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton-moe}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
python3 benchmarks/gpu/queue/moe_gpu.py --budget 130 --phases c,s,m \
  --shapes e128_r8,e128_r128,e128_r32,e128_r16,e128_r64,e16_r1024,e128_zipf,e256_r16,e256_r64 \
  --moe qwen3_t4096,dsv3_t4096,qwen3_t512
