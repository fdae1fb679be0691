#!/usr/bin/env bash
# Run queued area scripts on the device machine, one tarball of results per area under $OUT.
#   bash benchmarks/gpu/run_queue.sh AREA [AREA ...]
# Each benchmarks/gpu/queue/AREA.sh runs from the repository root with PYTHONPATH=src and
# writes its files under $OUT_AREA; its stdout/stderr land in $OUT_AREA/log.txt.
# benchmarks/gpu/queue/AREA.limit (seconds) caps its run time (default 150).
set -u
export PYTHONPATH=$PWD/src:${PYTHONPATH:-}
export PYTHONUNBUFFERED=1
for area in "$@"; do
  d=/tmp/res/$area
  mkdir -p "$d"
  limit=$(cat "benchmarks/gpu/queue/$area.limit" 2>/dev/null || echo 150)
  echo "=== $area (limit ${limit}s)"
  start=$(date +%s)
  OUT_AREA=$d timeout "$limit" bash "benchmarks/gpu/queue/$area.sh" >"$d/log.txt" 2>&1
  rc=$?
  echo "rc=$rc after $(($(date +%s) - start))s" | tee -a "$d/log.txt"
  tail -n 30 "$d/log.txt"
  tar czf "$OUT/$area.tgz" -C "$d" .
done
