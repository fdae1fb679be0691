#!/usr/bin/env bash
# Area attn (issue 6): FlashAttention forward + split-KV decode on the H200.
# Round 3 (last): decode with the rewritten key loads (checks, tile sweep, rows), then the forward rows
# with SDPA's default backend as the headline peer. Rows: $OUT_AREA/decode.json, $OUT_AREA/attention.json,
# written after every row.
set -u
BUDGET_S=${BUDGET_S:-105}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv,noheader || true
ATTN_BUDGET=$BUDGET_S python3 benchmarks/gpu/queue/attn_r3.py
