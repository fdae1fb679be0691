#!/usr/bin/env bash
# Session 2: after the 64 < M <= 128 tile change: GEMM GPU tests, then those shapes (eager and graphs).
set -u
TW=(python3 -c "import sys; from tilewise.cli import main; sys.exit(main(sys.argv[1:]))")
timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_matmul.py 2>&1 | tail -2
timeout 100 "${TW[@]}" bench gemm --shapes 96x12288x4096,80x8192x4096,112x6144x8192,128x11008x4096,72x16384x2048,128x24576x8192 --cuda-graph --rounds 3 --rep-ms 30 --json "$OUT_AREA/gemm_skinny128_rows.json"
