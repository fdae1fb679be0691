#!/usr/bin/env bash
# One GPU call for the pruner's external verdict: FlagGems' mm timed config by config (autotune_external.py),
# `tilewise calibrate` run for real on it, and the Inductor choice filter inside torch.compile(max-autotune).
#   bash benchmarks/autotune_device.sh OUT_DIR WHEEL_DIR      # WHEEL_DIR: flag-gems, sqlalchemy wheels (no internet)
# Then on the CPU: python benchmarks/autotune_report.py DIR --calibration flaggems_mm=FILE (see benchmarks/README.md).
set -u
OUT=${1:?OUT_DIR}
WHL=${2:?WHEEL_DIR}
mkdir -p "$OUT/raw"
T0=$SECONDS
python3 -m pip install --no-deps --no-index -q "$WHL"/*.whl >"$OUT/device.log" 2>&1
echo "[$((SECONDS - T0))s] wheels installed" | tee -a "$OUT/device.log"
python3 benchmarks/autotune_external.py --out "$OUT/raw" --kernels flaggems_mm --budget ${EXTERNAL_BUDGET:-70} --workers 15 \
  >>"$OUT/device.log" 2>&1
echo "[$((SECONDS - T0))s] external rows" | tee -a "$OUT/device.log"
python3 -m tilewise.cli calibrate benchmarks/autotune_targets.py:FLAGGEMS_MM --budget 30 \
  --out "$OUT/flaggems_mm.h200.json" >>"$OUT/device.log" 2>&1
echo "[$((SECONDS - T0))s] calibrate" | tee -a "$OUT/device.log"
[ -n "${SKIP_INDUCTOR:-}" ] || python3 benchmarks/probes/inductor_hook.py --out "$OUT/inductor_hook.json" --deadline 45 --timeout 70 \
  >>"$OUT/device.log" 2>&1
echo "[$((SECONDS - T0))s] inductor" | tee -a "$OUT/device.log"
tail -30 "$OUT/device.log"
