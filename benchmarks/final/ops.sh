#!/usr/bin/env bash
# ops: MH-MoE training step (fwd+bwd) on tilewise's grouped GEMMs vs torch._grouped_mm + autograd.
# From the repo root, PYTHONPATH=src, on the H200; <= 60 s wall; writes $OUT/ops/mhmoe_train.json
# (rows as they are measured) and $OUT/ops/ops.log. Shape A first; B only if time is left.
set -u
mkdir -p "$OUT/ops"
python3 benchmarks/mhmoe_train.py --out "$OUT/ops/mhmoe_train.json" --rounds 15 --deadline-s 38 > "$OUT/ops/ops.log" 2>&1
echo "rc=$?" >> "$OUT/ops/ops.log"
