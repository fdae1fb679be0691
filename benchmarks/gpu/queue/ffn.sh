#!/usr/bin/env bash
# Area `ffn` (issue 8), emergency check only (<= 60 s, NOT queued: the lead decides): bf16 / fp16 correctness
# at d_h = 128 and full size, forward and both backward modes, against fp32 (the final round's d_h = 128 checks
# stopped on the atomic mode's shared-memory limit, since fixed; its benchmark rows are complete).
set -u
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv || true
ROUND=3 BUDGET_S=55 CHECK_S=40 SECTIONS=check \
  CHECKS_FULL="4099x16x128x500xbf16,16384x16x128x512xbf16,4099x16x128x500xfp16,333x3x128x1000xbf16" \
  python3 benchmarks/gpu/queue/ffn_gpu.py
