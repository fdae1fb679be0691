#!/usr/bin/env bash
# Session 2: where decode_attention's host time goes (benchmarks/gpu/queue/host_profile.py).
set -u
python3 benchmarks/gpu/queue/host_profile.py
