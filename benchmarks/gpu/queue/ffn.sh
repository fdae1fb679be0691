#!/usr/bin/env bash
# Area `ffn` (issue 8): FlashFFN + MH-MoE on the H200. Correctness at full size (bf16/fp16, fwd/bwd),
# config sweeps of the three kernels, benchmark rows vs the unfused layer / dense SwiGLU / torch._grouped_mm.
set -u
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv || true
ROUND=1 BUDGET_S=228 python3 benchmarks/gpu/queue/ffn_gpu.py
