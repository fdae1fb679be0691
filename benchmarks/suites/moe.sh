#!/usr/bin/env bash
# moe.json: the fused MoE layer vs torch on torch._grouped_mm, Qwen3-like, 4096 tokens.
#   bash benchmarks/suites/moe.sh [OUT_DIR]      # default OUT_DIR benchmarks/results/h200
# On a CUDA machine from the repository root; TILEWISE names the CLI (default `tilewise`; without an install:
# TILEWISE="python3 -m tilewise.cli" PYTHONPATH=src). benchmarks/suites/quoted.sh runs it with the others.
set -euo pipefail
OUT=${1:-benchmarks/results/h200}
${TILEWISE:-tilewise} bench moe --configs qwen3_t4096 --rounds 3 --json "$OUT/moe.json"
