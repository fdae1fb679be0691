#!/usr/bin/env bash
# Session 2: attention forward with TMA descriptors + automatic warp specialisation (attn_ws.py).
set -u
timeout 280 python3 benchmarks/gpu/queue/attn_ws.py
