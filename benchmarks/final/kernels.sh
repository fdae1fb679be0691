#!/usr/bin/env bash
# kernels: issue 16 host cost per call on the H200 (`tilewise bench overhead`): every op and its torch peer on tiny
# problems, first through tilewise's compiled-kernel launch path, then six ops again through Triton's JIT launch
# (TILEWISE_JIT_LAUNCH=1) for the comparison. Rows are appended to $OUT/kernels/overhead.jsonl as they are measured
# (each names GPU, host CPU, date, versions, command and launch path); stdout/stderr go to $OUT/kernels/log.txt.
# Run from the repository root with PYTHONPATH=src; <= 60 s wall (compiles included).
set -u
mkdir -p "$OUT/kernels"
ROWS="$OUT/kernels/overhead.jsonl"
LOG="$OUT/kernels/log.txt"
OPS=empty,matmul,sum,attention,decode,grouped,moe,flash_ffn,sum_dim,ffn_module,mhmoe
timeout 40 python3 -m tilewise.cli bench overhead --ops "$OPS" --calls 1000 --rounds 3 --rows-out "$ROWS" >> "$LOG" 2>&1
echo "compiled-path run rc=$?" >> "$LOG"
TILEWISE_JIT_LAUNCH=1 timeout 14 python3 -m tilewise.cli bench overhead --ops empty,matmul,sum,attention,decode,grouped \
  --calls 1000 --rounds 3 --rows-out "$ROWS" >> "$LOG" 2>&1
echo "JIT-path run rc=$?" >> "$LOG"
