#!/usr/bin/env bash
# Rows of benchmarks/results/h200/overhead_jit.json: the same kind of run as overhead.json, every launch through
# Triton's JIT dispatch (TILEWISE_JIT_LAUNCH=1) for comparison with the compiled-kernel launch path.
set -euo pipefail
export TILEWISE_JIT_LAUNCH=1
tilewise bench overhead --ops empty,matmul,sum,attention,decode,grouped --calls 1000 --rounds 3 --json benchmarks/results/h200/overhead_jit.json
