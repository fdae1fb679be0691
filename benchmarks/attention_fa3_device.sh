#!/bin/bash
# One device call: GPU tests (4 processes, compile-bound), config variants, the sweep beside SDPA,
# the three designs, then Nsight Compute on the three designs. Results under $OUT.
# Run from the repository root: bash benchmarks/attention_fa3_device.sh
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/fa3_out}; mkdir -p $OUT
T0=$(date +%s)
if python3 -c "import pytest" 2>/dev/null; then
  i=0
  timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_attention.py -k forward > $OUT/pytest_old.txt 2>&1 &
  for k in "pingpong" "ring" "serial" "fp16 or strided"; do
    timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_attention_gluon.py -k "$k" > $OUT/pytest_$i.txt 2>&1 &
    i=$((i+1))
  done
  wait
  tail -n 3 $OUT/pytest_*.txt
else
  echo "no pytest on the device" | tee $OUT/pytest_0.txt
fi
echo "tests done at +$(( $(date +%s) - T0 ))s"
timeout 300 python3 benchmarks/attention_fa3.py --variants --sweep --designs --out $OUT > $OUT/bench.log 2>&1
tail -n 5 $OUT/bench.log
echo "bench done at +$(( $(date +%s) - T0 ))s"
NCU=$(command -v ncu)
if [ -n "$NCU" ]; then
  ncu --query-metrics --chip gh100 > /tmp/ncu_query.txt 2>&1
  M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"
  for base in sm__pipe_tensor_op_gmma_cycles_active sm__pipe_tensor_op_hmma_cycles_active lts__throughput dram__throughput sm__throughput; do
    grep -qw "^$base" /tmp/ncu_query.txt && M="$M,$base.avg.pct_of_peak_sustained_elapsed"
  done
  grep -qw "^sm__inst_executed_pipe_tensor_op_gmma" /tmp/ncu_query.txt && M="$M,sm__inst_executed_pipe_tensor_op_gmma.sum"
  grep -qw "^smsp__inst_executed_pipe_xu" /tmp/ncu_query.txt && M="$M,smsp__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"
  grep -i "tensor_op" /tmp/ncu_query.txt | head -40 > $OUT/ncu_tensor_metrics.txt
  echo "metrics: $M"
  timeout 150 ncu --clock-control none -k regex:_fa3_fwd_kernel -c 3 --metrics "$M" --csv \
    python3 benchmarks/attention_fa3.py --ncu-design all --out /tmp > $OUT/ncu.csv 2>&1
  grep -v "^==PROF==" $OUT/ncu.csv | tail -n 40
fi
echo "all done at +$(( $(date +%s) - T0 ))s"
