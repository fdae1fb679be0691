#!/usr/bin/env bash
# Area `ffn` (issue 8), final round: FlashFFN correctness at full size (bf16 fwd/bwd vs fp32), then the
# benchmark rows (every T x I x d_h, fwd and fwd+bwd, vs the unfused layer and the dense SwiGLU) and MH-MoE
# vs torch._grouped_mm. Configs are the ones round 1's sweep chose (now constants in kernels/flash_ffn.py).
set -u
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv || true
ROUND=2 BUDGET_S=112 CHECK_S=25 SECTIONS=check,bench,moe ROUNDS=3 REP_MS=30 python3 benchmarks/gpu/queue/ffn_gpu.py
