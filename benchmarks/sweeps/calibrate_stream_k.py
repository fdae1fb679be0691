"""The Gluon GEMM's stream-K slowdown per config, from the stream-K probe, and the model's error with it.

    python benchmarks/sweeps/calibrate_stream_k.py benchmarks/results/h200/gemm_stream_k.json \
        src/tilewise/model/calibration/h200_gemm_gluon.json

A stream-K config runs its data-parallel twin's main loop, so the model prices it at the twin's rates
(`tilewise.model.predict.gemm_gluon`) over the stream-K deal (`tilewise.model.waves.stream_k_split`) plus the
fix-up. On the H200 the dealt-out loop ran slower per step than those rates say, on the shapes where it keeps
twice the SMs busy. The slowdown is each config's median of measured time / predicted time over the probe's
40 problems; the model divides the config's MMA and stream efficiencies by it. Fitted on the same rows it is
scored on (one number per config); the fixture sweep (benchmarks/gemm_vs_cublas.py) is the held-out check of
the dispatch that uses it.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict

from calibrate_gluon import parse_tag  # the same folder: the Gluon tag read back

from tilewise.model.predict import gemm_gluon
from tilewise.model.tiles import gemm_gluon_tag


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    rows = [r for r in json.load(open(argv[0]))["data"] if "ours_graph_ms" in r and r["variant"] != "dispatch"]
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r["variant"].endswith("_sk"):
            by[r["variant"]].append(r)
    slow: dict[str, float] = {}
    for tag, rs in sorted(by.items()):
        c = parse_tag(tag)
        assert gemm_gluon_tag(c) == tag, tag
        s = 1.0
        for _ in range(3):  # the slowdown scales the efficiencies, not the time: converge on median ratio 1
            ratio = statistics.median(
                r["ours_graph_ms"] / gemm_gluon(r["problem"], c, "h200", {"stream_k_slowdown": s}).ms for r in rs
            )
            s *= ratio
        slow[tag] = round(s, 4)
        errs = [
            abs(math.log(gemm_gluon(r["problem"], c, "h200", {"stream_k_slowdown": s}).ms / r["ours_graph_ms"]))
            for r in rs
        ]
        print(f"{tag:28s} slowdown {s:.3f}  |log error| median {statistics.median(errs):.3f} max {max(errs):.3f}")
    with open(argv[1]) as f:
        cal = json.load(f)
    cal["stream_k"] = slow
    cal["stream_k_method"] = __doc__.strip().splitlines()[0]
    with open(argv[1], "w") as f:
        json.dump(cal, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
