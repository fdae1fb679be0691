#!/usr/bin/env bash
# Session 2: the decode kernel with its new default tile (128x4x3): GPU tests, then the decode rows eager and
# as CUDA-graph replays; the harness's own GPU tests.
set -u
TW=(python3 -c "import sys; from tilewise.cli import main; sys.exit(main(sys.argv[1:]))")
python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_attention.py tests/gpu/test_gpu_harness.py 2>&1 | tail -5
timeout 200 "${TW[@]}" bench decode --cuda-graph --rounds 5 --rep-ms 40 --json "$OUT_AREA/decode.json"
ls -la "$OUT_AREA"
