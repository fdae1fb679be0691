#!/usr/bin/env bash
# benchmarks/results/h200/gemm_sum_roofline.png: the roofline plot drawn from the committed GEMM and sum rows
# (gemm.json, sum.json); needs `pip install -e '.[plot]'`, no GPU.
set -euo pipefail
python - <<'PY'
from tilewise.bench import harness, plot

rows = harness.read_rows("benchmarks/results/h200/gemm.json") + harness.read_rows("benchmarks/results/h200/sum.json")
plot.roofline_plot(rows, "benchmarks/results/h200/gemm_sum_roofline.png")
plot.roofline_plot(rows, "docs/img/gemm_sum_roofline.png")  # the copy the docs site shows
PY
