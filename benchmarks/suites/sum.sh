#!/usr/bin/env bash
# sum.json: sum vs torch.sum over 1 GiB of fp32.
#   bash benchmarks/suites/sum.sh [OUT_DIR]      # default OUT_DIR benchmarks/results/h200
# On a CUDA machine from the repository root; TILEWISE names the CLI (default `tilewise`; without an install:
# TILEWISE="python3 -m tilewise.cli" PYTHONPATH=src). benchmarks/suites/quoted.sh runs it with the others.
set -euo pipefail
OUT=${1:-benchmarks/results/h200}
${TILEWISE:-tilewise} bench sum --sizes 1G --dtype fp32 --rounds 3 --rep-ms 40 --json "$OUT/sum.json"
