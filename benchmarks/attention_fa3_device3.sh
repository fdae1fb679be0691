#!/bin/bash
# Third device call: the dispatch path on the GPU (public op -> Gluon) and the headline shapes timed
# with ours and SDPA alternating. Results under $OUT.
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/fa3_out}; mkdir -p $OUT
T0=$(date +%s)
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_attention_gluon.py -k "fp16 or strided" > /tmp/p0.txt 2>&1 &
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu_attention.py -k forward > /tmp/p1.txt 2>&1 &
wait
tail -q -n 1 /tmp/p0.txt /tmp/p1.txt | tee $OUT/pytest_summary.txt
grep -h -B5 -A25 "Error\|FAILED" /tmp/p0.txt /tmp/p1.txt | head -60 >> $OUT/pytest_summary.txt
echo "tests done at +$(( $(date +%s) - T0 ))s"
timeout 60 python3 benchmarks/attention_fa3.py --interleave --out $OUT > $OUT/bench.log 2>&1
tail -n 4 $OUT/bench.log
echo "all done at +$(( $(date +%s) - T0 ))s"
