#!/bin/bash
# Second device call: GPU tests of the final kernel (4 processes), the scheduling knobs (adopted in-run),
# the 14-shape sweep beside SDPA with the adopted settings, the three designs, ncu on the designs.
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/fa3_out}; mkdir -p $OUT
T0=$(date +%s)
i=0
for k in "pingpong" "ring" "serial" "fp16 or strided"; do
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_attention_gluon.py -k "$k" > /tmp/pytest_$i.txt 2>&1 &
  i=$((i+1))
done
wait
tail -q -n 1 /tmp/pytest_*.txt | tee $OUT/pytest_summary.txt
grep -h -A30 "FAILED\|Error" /tmp/pytest_*.txt | head -60 >> $OUT/pytest_summary.txt
echo "tests done at +$(( $(date +%s) - T0 ))s"
timeout 150 python3 benchmarks/attention_fa3.py --schedule --sweep --designs --out $OUT > $OUT/bench.log 2>&1
grep -h "adopted\|sustained\|total" $OUT/bench.log
echo "bench done at +$(( $(date +%s) - T0 ))s"
M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"
timeout 40 ncu --clock-control none -k regex:_fa3_fwd_kernel -c 3 --metrics "$M" --csv \
  python3 benchmarks/attention_fa3.py --ncu-design all --out /tmp > $OUT/ncu.csv 2>&1
grep -c _fa3_fwd_kernel $OUT/ncu.csv
echo "all done at +$(( $(date +%s) - T0 ))s"
