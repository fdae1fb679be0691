#!/usr/bin/env bash
# Rows of benchmarks/results/h200/ffn_moe.json: NVIDIA H200, 2026-11-30, torch 2.11.0+cu130, triton 3.6.0.
# Run from the repository root on a CUDA machine with `pip install -e '.[kernels]'`.
set -euo pipefail
tilewise bench ffn --part moe --moe-shapes '4096,16,128,8,256,2;16384,16,128,8,256,2;4096,16,128,32,128,1;2048,16,128,32,128,1' --rounds 2 --rep-ms 40 --json benchmarks/results/h200/ffn_moe.json
