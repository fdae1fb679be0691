#!/usr/bin/env bash
# advise: the kernels' defaults as they are now (the advisor's top-1, tilewise.advise) timed beside cuBLAS on
# the sweep's GEMM problems, and the decode / grouped defaults, with the sweep's method (precompiled in
# workers, CUDA graphs, inputs rotated past L2, alternating rounds). Confirms on the device that the wired
# defaults run and take the times the committed sweep measured for the same configs.
# From the repo root, PYTHONPATH=src, on the H200; <= 60 s wall (new problems stop at 40 s); writes
# $OUT/advise/defaults.jsonl (one row per timed call, as measured) and $OUT/advise/meta.json.
set -u
mkdir -p "$OUT/advise" /tmp/advise_aux
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
timeout 65 python3 benchmarks/sweeps/sweep.py --out "$OUT/advise" --rows-file "$OUT/advise/defaults.jsonl" \
  --aux /tmp/advise_aux --sources hand,cublas --family gemm,decode,grouped --budget 40 --workers 14 \
  --no-calibrate "$@" > /tmp/advise_aux/stdout.txt 2>&1
echo "advise.sh rc=$?" | tee -a /tmp/advise_aux/stdout.txt
tail -3 /tmp/advise_aux/stdout.txt
