#!/usr/bin/env bash
# Rows of benchmarks/results/h200/gemm_skinny128_rows.json: NVIDIA H200, 2026-11-30, torch 2.11.0+cu130, triton 3.6.0.
# Run from the repository root on a CUDA machine with `pip install -e '.[kernels]'`.
set -euo pipefail
tilewise bench gemm --shapes 96x12288x4096,80x8192x4096,112x6144x8192,128x11008x4096,72x16384x2048,128x24576x8192 --cuda-graph --rounds 3 --rep-ms 30 --json benchmarks/results/h200/gemm_skinny128_rows.json
