#!/usr/bin/env bash
# Re-measure every results file that README.md and docs/ quote, with the code of this tree, in one GPU call.
#
#   TILEWISE_COMMIT=$(git rev-parse HEAD) bash benchmarks/suites/quoted.sh OUT_DIR
#   bash benchmarks/suites/quoted.sh --dry-run OUT_DIR      # print the commands, run nothing (no GPU needed)
#
# Run from the repository root on an H200 with the `kernels` extra (or PYTHONPATH=src). Each run below is
# independent: it has its own time limit, a failure is logged and the next one starts; every run writes one
# file under OUT_DIR with the rows' version / commit / dirty (`tilewise.bench.harness.source_state`: from git
# in a checkout, else from TILEWISE_COMMIT / TILEWISE_DIRTY; a copy of the tree without .git must set them).
# Copy the files that came back into benchmarks/results/h200/ (they replace the history files of those
# names) and update the figures the list below names. Limits add up to 195 s; OUT_DIR/quoted.log says
# which runs finished and how long each took.
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
# eager_targets  overhead_eager_targets.json   README eager targets; docs/bench.md eager targets
# attention      attention_fa3_headline.json   README attention (Gluon FA3) B4 H32 S4096 D128 non-causal; causal
# mhmoe          mhmoe_train.json              README MultiHeadMoE training (shape 0: T 4096, H 16, 8 experts of 256)
set -uo pipefail

DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ] || [ $# -ne 1 ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -eq 1 ] && exit 0 || exit 2
fi
OUT=$1
mkdir -p "$OUT"
export PYTHONPATH="${PYTHONPATH:-$PWD/src}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
TW="$PY -m tilewise.cli"
LOG="$OUT/quoted.log"
: > "$LOG"
T0=$(date +%s)

run() {  # run NAME LIMIT_S COMMAND...: one independent sub-run, its output in OUT/NAME.log
  local name=$1 limit=$2
  shift 2
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
run gemm 20 $TW bench gemm --shapes 8192x8192x8192,64x24576x8192 --cuda-graph --rounds 3 --rep-ms 30 --json "$OUT/gemm.json"
run sum 12 $TW bench sum --sizes 1G --dtype fp32 --rounds 3 --rep-ms 40 --json "$OUT/sum.json"
run decode 18 $TW bench decode --shapes 1,4 --cuda-graph --rounds 3 --rep-ms 30 --json "$OUT/decode.json"
run grouped 14 $TW bench grouped --shapes e128_r8,e128_r128 --rounds 3 --json "$OUT/grouped.json"
run moe 14 $TW bench moe --configs qwen3_t4096 --rounds 3 --json "$OUT/moe.json"
run ffn 22 $TW bench ffn --tokens 16384 --intermediate 512 --head-dims 128 --heads 16 --rounds 2 --rep-ms 40 --json "$OUT/ffn.json"
run overhead 18 $TW bench overhead --ops empty,launcher,matmul,sum,attention,decode,grouped,moe,flash_ffn,sum_dim,ffn_module,mhmoe \
  --calls 500 --rounds 3 --json "$OUT/overhead.json"
run eager_targets 15 $TW bench overhead --ops empty --calls 200 --rounds 1 --eager-targets --rep-ms 25 \
  --json "$OUT/overhead_eager_targets.json"
run attention 40 $PY benchmarks/attention_fa3.py --interleave --out "$OUT"
run mhmoe 22 $PY benchmarks/mhmoe_train.py --shapes 0 --rounds 8 --deadline-s 15 --out "$OUT/mhmoe_train.json"
[ "$DRY" = 1 ] || echo "total $(( $(date +%s) - T0 ))s" | tee -a "$LOG"
