#!/usr/bin/env bash
# decode.json: decode_attention vs SDPA: B8 Hq32 Hkv8 L32k and 32 sequences of 1k-64k, eager and as graphs.
#   bash benchmarks/suites/decode.sh [OUT_DIR]      # default OUT_DIR benchmarks/results/h200
# On a CUDA machine from the repository root; TILEWISE names the CLI (default `tilewise`; without an install:
# TILEWISE="python3 -m tilewise.cli" PYTHONPATH=src). benchmarks/suites/quoted.sh runs it with the others.
set -euo pipefail
OUT=${1:-benchmarks/results/h200}
${TILEWISE:-tilewise} bench decode --shapes 1,4 --cuda-graph --rounds 3 --rep-ms 30 --json "$OUT/decode.json"
