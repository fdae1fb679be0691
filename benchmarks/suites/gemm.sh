#!/usr/bin/env bash
# Rows of benchmarks/results/h200/gemm.json: NVIDIA H200, 2026-11-30, torch 2.11.0+cu130, triton 3.6.0.
# Run from the repository root on a CUDA machine with `pip install -e '.[kernels]'`.
set -euo pipefail
tilewise bench gemm --shapes all --rounds 3 --rep-ms 40 --json benchmarks/results/h200/gemm.json
