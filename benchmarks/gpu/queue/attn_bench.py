"""Round 2 on the H200 (area attn): the final benchmark rows, written after every row.

Equivalent to `tilewise bench decode --json $OUT_AREA/decode.json` and
`tilewise bench attention --json $OUT_AREA/attention.json`, run through the suites directly so
that an unrelated CLI module cannot stop them. Argument: which suites, e.g. `decode attention`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from tilewise.bench import harness
from tilewise.bench.suites import attention as attention_suite
from tilewise.bench.suites import decode as decode_suite

OUT = os.environ.get("OUT_AREA", "/tmp/attn_out")
T0 = time.time()


def progress(it, total=None, desc=None):
    for i, x in enumerate(it):
        print(f"[{time.time() - T0:.0f}s] {desc} {i + 1}/{total}: {x}", flush=True)
        yield x


for name in sys.argv[1:] or ["decode", "attention"]:
    suite = {"decode": decode_suite, "attention": attention_suite}[name]
    p = argparse.ArgumentParser()
    suite.add_arguments(p)
    p.add_argument("--json")
    extra = os.environ.get(f"ATTN_{name.upper()}_ARGS", "").split()
    args = p.parse_args([*extra, "--json", os.path.join(OUT, f"{name}.json")])
    cmd = f"tilewise bench {name} {' '.join(extra)} --json benchmarks/results/h200/{name}.json".replace("  ", " ")
    sys.argv = cmd.split()  # env_tags records the equivalent CLI command in every row
    try:
        rows = suite.run(args, progress)
        harness.write_rows(args.json, rows, meta=harness.env_tags(cmd))
        print(harness.format_table(rows), flush=True)
    except Exception as e:  # keep the other suite's rows
        import traceback

        traceback.print_exc()
        print(f"suite {name} failed: {e!r}", flush=True)
print(f"total {time.time() - T0:.0f}s")
