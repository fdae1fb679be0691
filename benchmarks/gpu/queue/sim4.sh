#!/usr/bin/env bash
# tilewise.sim ground truth, round 4 (session 2): an out-of-sample test of the 8/16-byte shared-load
# rule fitted to rounds 1-3 (tests/data/ncu/make_fixture.py --round 4, 1476 patterns).
set -u
echo "== $(date -u) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
python3 tests/data/ncu/make_fixture.py all --out "$OUT_AREA" --round 4 --budget 480 --chunks 4 --no-probe
rc=$?
rm -f "$OUT_AREA/twins"
ls -la "$OUT_AREA"
exit $rc
