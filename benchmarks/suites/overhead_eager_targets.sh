#!/usr/bin/env bash
# Rows of benchmarks/results/h200/overhead_eager_targets.json: NVIDIA H200, 2026-12-01, torch 2.11.0+cu130,
# triton 3.6.0, host CPU "Intel(R) Xeon(R) Processor" (16 cores). Run from the repository root on a CUDA machine
# with `pip install -e '.[kernels]'`.
set -euo pipefail
tilewise bench overhead --ops empty --calls 200 --rounds 1 --eager-targets --rep-ms 30 --json benchmarks/results/h200/overhead_eager_targets.json
