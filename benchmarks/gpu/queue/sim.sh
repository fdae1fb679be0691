#!/usr/bin/env bash
# tilewise.sim ground truth, round 3 (final): (1) the examples' kernels in CUDA, launch totals under ncu
# (tests/data/ncu/make_examples_fixture.py); (2) 192 two-lane probes of 8/16-byte shared loads
# (tests/data/ncu/make_fixture.py --round 3). Rounds 1-2 made ncu_access_round{1,2}.json.
set -u
echo "== $(date -u) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
python3 tests/data/ncu/make_examples_fixture.py --out "$OUT_AREA"
rm -f "$OUT_AREA/examples_twins"
python3 tests/data/ncu/make_fixture.py all --out "$OUT_AREA" --round "${SIM_ROUND:-3}" --budget 60 --chunks 1 --no-probe
rc=$?
rm -f "$OUT_AREA/twins"
ls -la "$OUT_AREA"
exit $rc
