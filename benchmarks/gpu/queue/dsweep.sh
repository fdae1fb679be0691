#!/usr/bin/env bash
# Session 2: decode tile x split sweep under CUDA graphs (benchmarks/gpu/queue/decode_sweep_graph.py).
set -u
SWEEP_BUDGET=250 python3 benchmarks/gpu/queue/decode_sweep_graph.py
