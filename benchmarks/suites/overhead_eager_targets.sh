#!/usr/bin/env bash
# overhead_eager_targets.json: the eager targets (GEMM, decode, sum) with do_bench and as back-to-back loops.
#   bash benchmarks/suites/overhead_eager_targets.sh [OUT_DIR]      # default OUT_DIR benchmarks/results/h200
# On a CUDA machine from the repository root; TILEWISE names the CLI (default `tilewise`; without an install:
# TILEWISE="python3 -m tilewise.cli" PYTHONPATH=src). benchmarks/suites/quoted.sh runs it with the others.
set -euo pipefail
OUT=${1:-benchmarks/results/h200}
${TILEWISE:-tilewise} bench overhead --ops empty --calls 200 --rounds 1 --eager-targets --rep-ms 25 --json "$OUT/overhead_eager_targets.json"
