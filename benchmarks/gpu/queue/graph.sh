#!/usr/bin/env bash
# Session 2: eager and CUDA-graph timings side by side (tilewise bench ... --cuda-graph), for the rows
# that session 1 found host-bound: decode, the GEMM targets, the attention headline shapes, the MoE layer.
set -u
TW=(python3 -c "import sys; from tilewise.cli import main; sys.exit(main(sys.argv[1:]))")
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv,noheader || true
timeout 170 "${TW[@]}" bench decode --cuda-graph --rounds 3 --rep-ms 40 --json "$OUT_AREA/decode_graph.json"
timeout 120 "${TW[@]}" bench gemm --shapes targets --cuda-graph --rounds 3 --rep-ms 40 --json "$OUT_AREA/gemm_graph.json"
timeout 120 "${TW[@]}" bench attention --shapes headline --cuda-graph --rounds 3 --rep-ms 40 --json "$OUT_AREA/attention_graph.json"
timeout 90 "${TW[@]}" bench moe --cuda-graph --rounds 3 --json "$OUT_AREA/moe_graph.json"
ls -la "$OUT_AREA"
