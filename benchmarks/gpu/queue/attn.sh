#!/usr/bin/env bash
# Area attn (issue 6): FlashAttention forward + split-KV decode on the H200.
# Round 2 (final): decode checks, decode tile sweep, decode rows, forward sweep, forward rows.
# Rows: $OUT_AREA/decode.json and $OUT_AREA/attention.json, written after every row.
set -u
BUDGET_S=${BUDGET_S:-140}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv,noheader || true
ATTN_BUDGET=$BUDGET_S python3 benchmarks/gpu/queue/attn_final.py
