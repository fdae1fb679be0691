#!/usr/bin/env bash
# tilewise.sim ground truth, round 5 (session 2): atomics. 508 one-warp patterns, one atom / red instruction
# each (tests/data/ncu/make_fixture.py --round 5): shared and global; atom (old value returned) and red,
# 4 and 8 bytes; side kinds f32 add, cas, max, exch, and an atom whose result is unused. The extra metric
# names are probed one by one (dropped ones recorded in the fixture); the SASS of every atomic kernel is
# printed (ptxas: an unused atom.global becomes REDG; shared u64 / f32 adds are LDS + ATOMS.CAST loops).
set -u
echo "== $(date -u) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
python3 tests/data/ncu/make_fixture.py all --out "$OUT_AREA" --round 5 --budget 120 --chunks 5
rc=$?
rm -f "$OUT_AREA/twins"
python3 - "$OUT_AREA" <<'PY' || true
import collections, json, sys
d = json.load(open(sys.argv[1] + "/ncu_access_round5.json"))
print(len(d["patterns"]), "patterns; dropped metrics:", d.get("metrics_dropped"))
seen = collections.Counter()
for p in d["patterns"]:
    k = (p["space"], p["op"], p["width"])
    if seen[k] >= 2:
        continue
    seen[k] += 1
    short = lambda n: n.replace(".sum", "").replace("l1tex__", "").replace("smsp__sass_inst_executed_", "inst_")
    m = {short(n): v for n, v in p["metrics"].items() if v not in (0, "0")}
    print(p["id"], *k, p["name"], hex(p["mask"]), m)
PY
ls -la "$OUT_AREA"
exit $rc
