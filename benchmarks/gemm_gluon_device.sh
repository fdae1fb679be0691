#!/bin/bash
# The Gluon GEMM's files in one H200 call: the fixture rows (dispatched matmul beside cuBLAS,
# gemm_vs_cublas.json), the Gluon GPU tests, and ncu on three shapes (ncu.csv, from which gemm_gluon_ncu.json).
#   TILEWISE_COMMIT=$(git rev-parse HEAD) PYTHONPATH=src bash benchmarks/gemm_gluon_device.sh OUT_DIR
# Run from the repository root; each step has its own time limit (about 175 s in all).
OUT=${1:-${OUT:?usage: bash benchmarks/gemm_gluon_device.sh OUT_DIR}}
mkdir -p "$OUT"
timeout 105 python3 benchmarks/gemm_vs_cublas.py --out $OUT/gemm_vs_cublas.json --rounds 2 --rep-ms 15 \
  2>&1 | grep -v -i warn | tail -n 25
timeout 45 python3 -m pytest tests/gpu/test_gpu_gemm_gluon.py -q -x -p no:cacheprovider 2>&1 | tail -n 15 | tee $OUT/gpu_tests.txt
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
timeout 25 ncu --clock-control none -k regex:_gemm_gluon_kernel --launch-skip 3 -c 3 --metrics "$M" --csv \
  python3 benchmarks/gemm_gluon_ncu.py > $OUT/ncu.csv 2>&1
grep -v "^==PROF==" $OUT/ncu.csv | tail -n 20
