#!/usr/bin/env bash
# Rows of benchmarks/results/h200/overhead.json (not yet measured: the 2026-12-01 run timed out after 7 of 11 ops
# while compiling). Host cost per call of every op and its torch peer; every row names the host CPU.
set -euo pipefail
tilewise bench overhead --calls 2000 --rounds 5 --json benchmarks/results/h200/overhead.json
