#!/usr/bin/env bash
# Rows of benchmarks/results/h200/moe.json: NVIDIA H200, 2026-11-30, torch 2.11.0+cu130, triton 3.6.0.
# Run from the repository root on a CUDA machine with `pip install -e '.[kernels]'`.
set -euo pipefail
tilewise bench moe --configs qwen3_t4096,qwen3_t512,dsv3_t4096,dsv3_t512 --rounds 3 --json benchmarks/results/h200/moe.json
