#!/usr/bin/env bash
# Session 2: the 64 < M <= 128 skinny GEMM tile check (gemm_skinny128.py).
set -u
timeout 120 python3 benchmarks/gpu/queue/gemm_skinny128.py
