#!/usr/bin/env bash
# Area attn (issue 6): FlashAttention forward + split-KV decode on the H200.
# Round 1: full-size correctness (bf16/fp16), copy bandwidth, a small config sweep side by side
# with SDPA; rows of the best config per headline shape go to $OUT_AREA/{attention,decode}_r1.json.
set -u
BUDGET_S=${BUDGET_S:-140}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader || true
ATTN_BUDGET=$BUDGET_S python3 benchmarks/gpu/queue/attn_sweep.py
