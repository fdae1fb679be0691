#!/usr/bin/env bash
# Rows of benchmarks/results/h200/grouped.json: NVIDIA H200, 2026-11-30, torch 2.11.0+cu130, triton 3.6.0.
# Run from the repository root on a CUDA machine with `pip install -e '.[kernels]'`.
set -euo pipefail
tilewise bench grouped --shapes e128_r8,e128_r16,e128_r32,e128_r64,e128_r128,e128_zipf,e256_r16,e256_r64,e16_r1024 --rounds 3 --json benchmarks/results/h200/grouped.json
