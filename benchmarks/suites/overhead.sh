#!/usr/bin/env bash
# overhead.json: host cost per call of every op beside its torch peer (tiny problems, back-to-back calls, one sync).
#   bash benchmarks/suites/overhead.sh [OUT_DIR]      # default OUT_DIR benchmarks/results/h200
# On a CUDA machine from the repository root; TILEWISE names the CLI (default `tilewise`; without an install:
# TILEWISE="python3 -m tilewise.cli" PYTHONPATH=src). benchmarks/suites/quoted.sh runs it with the others.
set -euo pipefail
OUT=${1:-benchmarks/results/h200}
${TILEWISE:-tilewise} bench overhead --ops empty,launcher,matmul,sum,attention,decode,grouped,moe,flash_ffn,sum_dim,ffn_module,mhmoe --calls 500 --rounds 3 --json "$OUT/overhead.json"
