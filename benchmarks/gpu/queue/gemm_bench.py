"""Run one of area gemm's suites exactly as `tilewise bench SUITE ARGS...` would, without importing the
other areas' suites (a broken neighbour must not cost this round). Rows go to --json via harness.write_rows.

    python3 benchmarks/gpu/queue/gemm_bench.py gemm --shapes all --json $OUT_AREA/gemm.json
"""

import argparse
import importlib
import sys

from tilewise.bench import harness


def main(argv):
    suite = importlib.import_module(f"tilewise.bench.suites.{argv[0]}")
    p = argparse.ArgumentParser(prog=f"tilewise bench {argv[0]}")
    suite.add_arguments(p)
    p.add_argument("--json")
    p.add_argument("--command", help="the command to record in the rows")
    args = p.parse_args(argv[1:])
    sys.argv = (args.command or f"tilewise bench {' '.join(argv)}").split()
    rows = suite.run(args, harness.progress)
    print(harness.format_table(rows), flush=True)
    if args.json:
        harness.write_rows(args.json, rows, meta=harness.env_tags())
        print(f"wrote {len(rows)} rows to {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
