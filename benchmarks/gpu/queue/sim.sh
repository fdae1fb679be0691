#!/usr/bin/env bash
# tilewise.sim ground truth: Nsight Compute counters of one-warp access patterns (round 1: 530 survey patterns; round 2: 568 probes) (tests/data/ncu/make_fixture.py).
set -u
echo "== $(date -u) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
ncu --version | tail -1; nvcc --version | tail -1
ncu --query-metrics --chip gh100 2>/dev/null | grep -E '^(l1tex__(data_bank|data_pipe_lsu_wave|t_(sectors|requests)_pipe_lsu_mem_(global|shared))|smsp__sass_inst_executed_op_(global|shared))' > "$OUT_AREA/metrics_list.txt" || true
python3 tests/data/ncu/make_fixture.py all --out "$OUT_AREA" --round "${SIM_ROUND:-2}" --budget 120 --chunks 3
rc=$?
rm -f "$OUT_AREA/twins"
python3 - "$OUT_AREA" <<'PY'
import json, sys, glob, collections
for f in glob.glob(sys.argv[1] + "/ncu_access_round*.json"):
    d = json.load(open(f))
    print(f, len(d["patterns"]), "patterns")
    for p in d["patterns"][:24]:
        m = p["metrics"]; sp = p["space"]; op = p["op"]
        if sp == "global":
            v = (m.get(f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"), m.get(f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"))
        else:
            v = (m.get(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"), m.get(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"))
        print(p["id"], sp, op, p["width"], p["name"], hex(p["mask"]), v)
PY
exit $rc
