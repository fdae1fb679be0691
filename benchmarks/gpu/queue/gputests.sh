#!/usr/bin/env bash
# The whole GPU test suite on the code as committed (python3 -m pytest -m gpu tests/gpu).
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu > "$OUT_AREA/gpu_tests.txt" 2>&1
echo "pytest rc=$?" | tee -a "$OUT_AREA/gpu_tests.txt"
tail -3 "$OUT_AREA/gpu_tests.txt"
