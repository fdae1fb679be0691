#!/bin/bash
# One device call for the attention backward: the GPU tests (4 processes, compile-bound), then the
# benchmark (sweep beside cuDNN / flash SDPA, memory). Results under $OUT.
# Run from the repository root: bash benchmarks/attention_backward_device.sh [bench options]
# TESTS=0 skips the tests (the benchmark alone, with --precompile 15, runs in about a minute).
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/bwd_out}; mkdir -p $OUT
T0=$(date +%s)
T=tests/gpu/test_gpu_attention_backward.py
if [ "${TESTS:-1}" != 0 ]; then
  i=0
  for k in "d64" "d128" "d256" "not every_gradient"; do
    timeout ${TEST_S:-90} python3 -m pytest -q -p no:cacheprovider -m gpu $T -k "$k" -rf > $OUT/pytest_$i.txt 2>&1 &
    i=$((i+1))
  done
  wait
  tail -n 4 $OUT/pytest_*.txt
  echo "tests done at +$(( $(date +%s) - T0 ))s"
fi
timeout ${BENCH_S:-110} python3 benchmarks/attention_backward.py --out $OUT "$@" > $OUT/bench.txt 2>&1
echo "bench rc $? at +$(( $(date +%s) - T0 ))s"
tail -n 60 $OUT/bench.txt
