#!/usr/bin/env bash
# Session 2, last device call: the whole GPU test suite on the code as committed, then the GEMM sweep
# (35 shapes) eager and as CUDA graphs, to separate host time from kernel time on the small shapes.
set -u
TW=(python3 -c "import sys; from tilewise.cli import main; sys.exit(main(sys.argv[1:]))")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu > "$OUT_AREA/gpu_tests.txt" 2>&1
echo "pytest rc=$?" | tee -a "$OUT_AREA/gpu_tests.txt"
tail -3 "$OUT_AREA/gpu_tests.txt"
timeout 200 "${TW[@]}" bench gemm --shapes all --cuda-graph --rounds 3 --rep-ms 30 --json "$OUT_AREA/gemm_sweep_graph.json"
ls -la "$OUT_AREA"
