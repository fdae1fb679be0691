#!/usr/bin/env bash
# Session 2: L2 read bandwidth of the H200 (l2_probe.py).
set -u
timeout 150 python3 benchmarks/gpu/queue/l2_probe.py
