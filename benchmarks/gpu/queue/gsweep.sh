#!/usr/bin/env bash
# Session 2: GEMM config sweep on the shapes below 0.8x cuBLAS as graphs (gemm_small_sweep.py).
set -u
SWEEP_BUDGET=230 timeout 280 python3 benchmarks/gpu/queue/gemm_small_sweep.py
