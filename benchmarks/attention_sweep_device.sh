#!/bin/bash
# One device call: compile every column in 12 processes (fills Triton's cache), the new GPU tests beside them,
# then the decode and forward sweeps alone on the GPU. Run from the repository root; results under $OUT.
# TESTS=0 skips the tests; WARM_S / DEC_S / FWD_S set the time limits (FlashAttention-4's columns compile longer).
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/sweep_out}; mkdir -p $OUT
T0=$(date +%s)
for i in $(seq 0 11); do
  timeout ${WARM_S:-75} python3 benchmarks/attention_sweep.py --part warm --shard $i/12 --out /tmp/warm > /tmp/warm_$i.txt 2>&1 &
done
if [ "${TESTS:-1}" != 0 ] && python3 -c "import pytest" 2>/dev/null; then
  timeout 80 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_decode_merge.py \
    tests/gpu/test_gpu_one_launch.py > $OUT/pytest.txt 2>&1 &
  timeout 80 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_attention_gluon.py \
    -k "schedules or capture or fp16_and_dispatch" > $OUT/pytest_gluon.txt 2>&1 &
fi
wait
tail -n 2 /tmp/warm_*.txt | grep -v "^$" | tail -n 30; tail -n 5 $OUT/pytest.txt $OUT/pytest_gluon.txt
echo "warm + tests done at +$(( $(date +%s) - T0 ))s"
timeout ${DEC_S:-50} python3 benchmarks/attention_sweep.py --part decode --out $OUT > $OUT/decode.log 2>&1
tail -n 3 $OUT/decode.log; echo "decode done at +$(( $(date +%s) - T0 ))s"
timeout ${FWD_S:-75} python3 benchmarks/attention_sweep.py --part forward --out $OUT > $OUT/forward.log 2>&1
tail -n 3 $OUT/forward.log; echo "all done at +$(( $(date +%s) - T0 ))s"
NCU=$(command -v ncu)
if [ -n "$NCU" ]; then
  M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
  timeout 25 ncu --clock-control none -k regex:_fa3_fwd_kernel -c 3 --metrics "$M" --csv \
    python3 benchmarks/attention_sweep.py --part ncu > $OUT/ncu.csv 2>&1
  grep -v "^==PROF==" $OUT/ncu.csv | tail -n 12
fi
echo "ncu done at +$(( $(date +%s) - T0 ))s"
