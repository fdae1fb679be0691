#!/usr/bin/env bash
# Rows of benchmarks/results/h200/gemm_tf32.json: NVIDIA H200, 2026-11-30, torch 2.11.0+cu130, triton 3.6.0.
# Run from the repository root on a CUDA machine with `pip install -e '.[kernels]'`.
set -euo pipefail
tilewise bench gemm --dtype fp32 --shapes 4096x4096x4096,64x24576x8192,1000x1000x1000 --rounds 3 --rep-ms 40 --json benchmarks/results/h200/gemm_tf32.json
