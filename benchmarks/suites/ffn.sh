#!/usr/bin/env bash
# ffn.json: FlashFFN forward and training step vs the unfused per-head layer, T 16384, H 16, d_h 128, I 512.
#   bash benchmarks/suites/ffn.sh [OUT_DIR]      # default OUT_DIR benchmarks/results/h200
# On a CUDA machine from the repository root; TILEWISE names the CLI (default `tilewise`; without an install:
# TILEWISE="python3 -m tilewise.cli" PYTHONPATH=src). benchmarks/suites/quoted.sh runs it with the others.
set -euo pipefail
OUT=${1:-benchmarks/results/h200}
${TILEWISE:-tilewise} bench ffn --tokens 16384 --intermediate 512 --head-dims 128 --heads 16 --rounds 2 --rep-ms 40 --json "$OUT/ffn.json"
