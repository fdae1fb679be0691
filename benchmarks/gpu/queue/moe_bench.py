"""The benchmark rows of area `moe`: the `grouped` and `moe` suites, written with harness.write_rows.

Equivalent to
    tilewise bench grouped --rounds 3 --json $OUT_AREA/grouped.json
    tilewise bench moe --rounds 3 --json $OUT_AREA/moe.json
(run in one process so the kernels compile once).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from tilewise.bench import harness
from tilewise.bench.suites import grouped, moe

OUT = os.environ.get("OUT_AREA", "/tmp/out")
T0 = time.time()


def progress(it, total=None, desc=None):
    for x in it:
        print(f"[{time.time() - T0:5.0f}s] {desc}: {x}", flush=True)
        yield x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=",".join(grouped.SHAPES))
    ap.add_argument("--configs", default=",".join(moe.CONFIGS))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    out = {}
    for suite, args, fname, cmd in (
        (
            grouped,
            argparse.Namespace(shapes=a.shapes, dtype="bf16", rounds=a.rounds, no_loop=False),
            "grouped.json",
            f"tilewise bench grouped --shapes {a.shapes} --rounds {a.rounds} --json benchmarks/results/h200/grouped.json",
        ),
        (
            moe,
            argparse.Namespace(configs=a.configs, dtype="bf16", rounds=a.rounds),
            "moe.json",
            f"tilewise bench moe --configs {a.configs} --rounds {a.rounds} --json benchmarks/results/h200/moe.json",
        ),
    ):
        sys.argv = cmd.split()  # env_tags records the equivalent command in each row
        try:
            rows = suite.run(args, progress)
        except Exception as ex:  # keep the other suite's rows
            print(f"{suite.NAME}: ERROR {ex!r}", flush=True)
            continue
        harness.write_rows(
            os.path.join(OUT, fname), rows, meta=harness.env_tags(cmd + "  (via benchmarks/gpu/queue/moe.sh)")
        )
        out[suite.NAME] = rows
        if suite is grouped:
            cols = ("shape", "peer", "ours_ms", "peer_ms", "speedup", "tflops", "tbps", "weight_tbps", "config")
            cols += ("waves", "prologue_share", "roofline_fraction")
        else:
            cols = ("shape", "ours_ms", "peer_ms", "speedup", "tflops", "tbps", "up_config", "down_config")
            cols += ("up_waves", "up_prologue_share", "roofline_fraction")
        print(harness.format_table(rows, cols), flush=True)
    print(f"bench total {time.time() - T0:.0f}s")


if __name__ == "__main__":
    main()
