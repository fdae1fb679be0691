#!/usr/bin/env bash
# grouped.json: grouped_matmul vs torch._grouped_mm: 128 experts x 8 rows and x 128 rows.
#   bash benchmarks/suites/grouped.sh [OUT_DIR]      # default OUT_DIR benchmarks/results/h200
# On a CUDA machine from the repository root; TILEWISE names the CLI (default `tilewise`; without an install:
# TILEWISE="python3 -m tilewise.cli" PYTHONPATH=src). benchmarks/suites/quoted.sh runs it with the others.
set -euo pipefail
OUT=${1:-benchmarks/results/h200}
${TILEWISE:-tilewise} bench grouped --shapes e128_r8,e128_r128 --rounds 3 --json "$OUT/grouped.json"
