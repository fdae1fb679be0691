#!/usr/bin/env bash
# Re-measure every results file that README.md and docs/ quote, with the code of this tree, in one GPU call.
#
#   TILEWISE_COMMIT=$(git rev-parse HEAD) bash benchmarks/suites/quoted.sh OUT_DIR
#   bash benchmarks/suites/quoted.sh --dry-run OUT_DIR      # print the commands, run nothing (no GPU needed)
#   ONLY="decode overhead" bash benchmarks/suites/quoted.sh OUT_DIR   # only the runs named (after a change to them)
#
# Run from the repository root on an H200 with the `kernels` extra (or PYTHONPATH=src; TILEWISE names the CLI,
# default `python3 -m tilewise.cli`). The tilewise runs are the suites/<name>.sh scripts. Each run below is
# independent: it has its own time limit, a failure is logged and the next one starts; every run writes one
# file under OUT_DIR with the rows' version / commit / dirty (`tilewise.bench.harness.source_state`: from git
# in a checkout, else from TILEWISE_COMMIT / TILEWISE_DIRTY; a copy of the tree without .git must set them).
# Copy the files that came back into benchmarks/results/h200/ (they replace the history files of those
# names), update the figures the list below names (and drop their "history" mark in README.md), then
# rebuild what is drawn from them: `python -m tilewise.web.measured_build` (the explorer's packaged rows)
# and `bash benchmarks/suites/gemm_sum_roofline.sh` (the roofline plot); tests/test_results_current.py
# and tests/test_web_measured.py check both. Limits add up to 242 s; OUT_DIR/quoted.log says which runs
# finished and how long each took.
#
# run            file                          backs
# gemm           gemm.json                     README "Results at a glance": matmul 8192^3, 64 x 24576 x 8192;
#                                              docs/kernels.md GEMM targets (eager and CUDA graphs)
# sum            sum.json                      README: sum 1 GiB fp32; docs/kernels.md "The sum"
# decode         decode.json                   README: decode 32 sequences 1k-64k, B8 Hq32 Hkv8 L32k (eager, graphs)
# grouped        grouped.json                  README: grouped_matmul 128 experts x 8 rows, x 128 rows
# moe            moe.json                      README: moe Qwen3-like layer, 4096 tokens
# ffn            ffn.json                      README: flash_ffn T 16384 H 16 d_h 128 I 512, forward; forward + backward
# overhead       overhead.json                 README "Host cost per call"; docs/bench.md host-cost table
# overhead_eager_targets  overhead_eager_targets.json  README eager targets; docs/bench.md eager targets
# attention      attention_fa3_headline.json   README attention (Gluon FA3) B4 H32 S4096 D128 non-causal; causal
# mhmoe          mhmoe_train.json              README MultiHeadMoE training (shape 0: T 4096, H 16, 8 experts of 256)
# Not here (over the budget): the Gluon GEMM's rows (README matmul Gluon GEMM and dispatched rows, docs/kernels.md)
# come from benchmarks/gemm_gluon_device.sh OUT_DIR (~175 s), gemm_gluon_probe.json from its probe; docs/kernels.md's
# attention and decode sweeps (attention_sweep.json, decode_sweep.json) from benchmarks/attention_sweep_device.sh
# (~150 s) and benchmarks/decode_sweep_device.sh (~85 s); the rest of benchmarks/results/ is history (each file
# says why).
set -uo pipefail

DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ] || [ $# -ne 1 ]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -eq 1 ] && exit 0 || exit 2
fi
OUT=$1
RUNS="gemm sum decode grouped moe ffn overhead overhead_eager_targets attention mhmoe"
for name in ${ONLY:-}; do
  if [[ " $RUNS " != *" $name "* ]]; then
    echo "quoted.sh: ONLY must name runs among: $RUNS; got '$name'" >&2
    exit 2
  fi
done
mkdir -p "$OUT"
export PYTHONPATH="${PYTHONPATH:-$PWD/src}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
export TILEWISE="${TILEWISE:-$PY -m tilewise.cli}"
LOG="$OUT/quoted.log"
: > "$LOG"
T0=$(date +%s)

run() {  # run NAME LIMIT_S COMMAND...: one independent sub-run, its output in OUT/NAME.log
  local name=$1 limit=$2
  shift 2
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return 0; fi  # ONLY="decode overhead": those runs
  if [ "$DRY" = 1 ]; then echo "$name (limit ${limit}s): $*"; return 0; fi
  local t=$(date +%s)
  timeout --kill-after=5 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc $(( $(date +%s) - t ))s (at +$(( $(date +%s) - T0 ))s)" | tee -a "$LOG"
}

if [ "$DRY" = 0 ]; then
  echo "commit ${TILEWISE_COMMIT:-<from git or unknown>} dirty ${TILEWISE_DIRTY:-<from git or unknown>}" | tee -a "$LOG"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader >> "$LOG" 2>&1
fi
run gemm 20 bash benchmarks/suites/gemm.sh "$OUT"
run sum 12 bash benchmarks/suites/sum.sh "$OUT"
run decode 18 bash benchmarks/suites/decode.sh "$OUT"
run grouped 14 bash benchmarks/suites/grouped.sh "$OUT"
run moe 14 bash benchmarks/suites/moe.sh "$OUT"
run ffn 22 bash benchmarks/suites/ffn.sh "$OUT"
run overhead 45 bash benchmarks/suites/overhead.sh "$OUT"
run overhead_eager_targets 35 bash benchmarks/suites/overhead_eager_targets.sh "$OUT"
run attention 40 $PY benchmarks/attention_fa3.py --interleave --out "$OUT"
run mhmoe 22 $PY benchmarks/mhmoe_train.py --shapes 0 --rounds 8 --deadline-s 15 --out "$OUT/mhmoe_train.json"
[ "$DRY" = 1 ] || echo "total $(( $(date +%s) - T0 ))s" | tee -a "$LOG"
