#!/bin/bash
# One device call: compile the decode variants' kernels in 15 processes, then time them beside SDPA.
# Run from the repository root; decode_variants.json under $OUT (69 s on the H200).
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/variants_out}; mkdir -p $OUT
T0=$(date +%s)
for i in $(seq 0 14); do
  timeout 90 python3 benchmarks/probes/decode_variants.py --warm $i/15 > /tmp/variants_warm_$i.txt 2>&1 &
done
wait
echo "warm done at +$(( $(date +%s) - T0 ))s"
timeout 170 python3 benchmarks/probes/decode_variants.py --out $OUT/decode_variants.json 2>&1 | tee $OUT/variants.log
echo "variants done at +$(( $(date +%s) - T0 ))s"
