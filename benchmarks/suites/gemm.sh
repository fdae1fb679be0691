#!/usr/bin/env bash
# gemm.json: matmul vs cuBLAS, bf16, 8192^3 and the decode GEMM 64 x 24576 x 8192, eager and as CUDA-graph replays.
#   bash benchmarks/suites/gemm.sh [OUT_DIR]      # default OUT_DIR benchmarks/results/h200
# On a CUDA machine from the repository root; TILEWISE names the CLI (default `tilewise`; without an install:
# TILEWISE="python3 -m tilewise.cli" PYTHONPATH=src). benchmarks/suites/quoted.sh runs it with the others.
set -euo pipefail
OUT=${1:-benchmarks/results/h200}
${TILEWISE:-tilewise} bench gemm --shapes 8192x8192x8192,64x24576x8192 --cuda-graph --rounds 3 --rep-ms 30 --json "$OUT/gemm.json"
