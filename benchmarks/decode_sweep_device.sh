#!/bin/bash
# One device call: compile the decode columns in 12 processes, then the decode sweep alone on the GPU.
# Run from the repository root; decode_sweep.json under $OUT.
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/sweep_out}; mkdir -p $OUT
T0=$(date +%s)
for i in $(seq 0 11); do
  timeout 40 python3 benchmarks/attention_sweep.py --part warm --warm-only decode --shard $i/12 --out /tmp/warm \
    > /tmp/warm_$i.txt 2>&1 &
done
wait
echo "warm done at +$(( $(date +%s) - T0 ))s"
timeout 45 python3 benchmarks/attention_sweep.py --part decode --out $OUT > $OUT/decode.log 2>&1
tail -n 4 $OUT/decode.log; echo "decode done at +$(( $(date +%s) - T0 ))s"
