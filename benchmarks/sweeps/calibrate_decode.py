"""Fit the decode family's calibration (CPU only) on the decode variants and the sweep's decode calibration split.

    python benchmarks/sweeps/calibrate_decode.py              # fit, print the figures
    python benchmarks/sweeps/calibrate_decode.py --write      # and write them into calibration/h200.json
    python benchmarks/sweeps/calibrate_decode.py --held-out   # fit on half the variants, score the other half

What it fits, by coordinate descent (each figure over its grid, the others held, PASSES times), minimising the
mean |log(predicted / measured)| over the advisor's space columns of benchmarks/results/h200/decode_variants.json
(25 problems, CUDA graphs) plus the same mean over the decode problems of the sweep's calibration split
(tests/data/sweeps/h200/decode.jsonl, split "cal"): the constants decode_read_tbps (the bandwidth decode's K/V
stream sustains), decode_latency_us (its Little's law) and decode_step_latency_us (one K/V step's round trip in a
program's chain), then one MMA rate per key tile. The stream rate is 1 for every tile (the bandwidth is the
constants' alone) and the fill scale 0.5 (calibrate.py's shared value). The other families' figures are not read
or written here; calibrate.py keeps the decode section as this script wrote it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "src"))

import decode_advisor_report as R  # noqa: E402

from tilewise.advise.space import DECODE_TILES  # noqa: E402
from tilewise.model import predict as M  # noqa: E402

GRID = {
    "decode_read_tbps": (4.3, 4.35, 4.4, 4.45, 4.5, 4.55, 4.6),
    "decode_latency_us": (0.6, 0.8, 1.0, 1.2, 1.5, 1.8),
    "decode_step_latency_us": (0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.4),
}
MMA = (0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.22, 0.25, 0.28, 0.32, 0.36)
PASSES = 3
FIXED = 0.5
TAGS = tuple(f"n{bn}_w{w}_st{st}_s1" for bn, w, st in DECODE_TILES)
START = {"decode_read_tbps": 4.5, "decode_latency_us": 1.2, "decode_step_latency_us": 0.8}


def sweep_cal(path: str) -> list[dict[str, Any]]:
    """The sweep's decode calibration problems in `decode_advisor_report.problems`' shape (every config in space)."""
    out: dict[str, dict[str, Any]] = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("split") != "cal" or r.get("source", "space") != "space" or not isinstance(r.get("ms"), float):
                continue
            pr = out.setdefault(r["key"], {"shape": r["key"], "problem": r["problem"], "sdpa_ms": 0.0, "columns": []})
            pr["columns"].append({"name": r["tag"], "config": r["config"], "ms": r["ms"], "space": True})
    return list(out.values())


def loss(sets: list[list[dict[str, Any]]], consts: dict[str, float], mma: dict[str, float]) -> float:
    """Sum over the data sets of the mean |log(predicted / measured)| over their space columns."""
    total = 0.0
    for probs in sets:
        errs = []
        for pr in probs:
            for c in pr["columns"]:
                if not c["space"]:
                    continue
                tag = "n{block_n}_w{num_warps}_st{num_stages}_s1".format(**c["config"])
                eff = {"mma": mma[tag], "stream": 1.0, "fixed": FIXED}
                ms = M.predict("decode", pr["problem"], c["config"], "h200", efficiency=eff, constants=consts).ms
                errs.append(abs(math.log(ms / c["ms"])))
        total += statistics.fmean(errs)
    return total


def fit(sets: list[list[dict[str, Any]]]) -> tuple[dict[str, float], dict[str, float], float]:
    consts, mma = dict(START), {t: 0.18 for t in TAGS}
    best = loss(sets, consts, mma)
    for _ in range(PASSES):
        for name, values in GRID.items():
            for v in values:
                e = loss(sets, {**consts, name: v}, mma)
                if e < best - 1e-9:
                    best, consts = e, {**consts, name: v}
        for t in TAGS:
            for v in MMA:
                e = loss(sets, consts, {**mma, t: v})
                if e < best - 1e-9:
                    best, mma = e, {**mma, t: v}
    return consts, mma, best


def effs(mma: dict[str, float]) -> dict[str, dict[str, float]]:
    return {t: {"mma": m, "stream": 1.0, "fixed": FIXED} for t, m in mma.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweep", default=os.path.join(ROOT, "tests", "data", "sweeps", "h200", "decode.jsonl"))
    ap.add_argument("--write", action="store_true", help="write the fit into src/tilewise/model/calibration/h200.json")
    ap.add_argument("--held-out", action="store_true", help="fit on half the variants' problems, score the rest")
    a = ap.parse_args(argv)
    variants, cal = R.problems(), sweep_cal(a.sweep)
    if a.held_out:
        half = {p["shape"]: int(hashlib.sha1(p["shape"].encode()).hexdigest(), 16) % 2 for p in variants}
        for h in (0, 1):
            fit_on = [p for p in variants if half[p["shape"]] == h]
            rest = [p for p in variants if half[p["shape"]] != h]
            consts, mma, _ = fit([fit_on, cal])
            v = R.evaluate(rest, efficiency=effs(mma), constants=consts)
            print(f"fit on {len(fit_on)} problems {consts}; held-out {v['problems']}: top-1 within 1% "
                  f"{v['within_1pct']}, 2% {v['within_2pct']}, 5% {v['within_5pct']}; error median "
                  f"{v['error_median']:.1%}")  # fmt: skip
        return 0
    consts, mma, best = fit([variants, cal])
    v = R.evaluate(variants, efficiency=effs(mma), constants=consts)
    print(f"{consts} mma {mma}: loss {best:.4f}; top-1 within 1% {v['within_1pct']} of {v['problems']}, "
          f"2% {v['within_2pct']}, 5% {v['within_5pct']}; error median {v['error_median']:.1%}")  # fmt: skip
    if a.write:
        path = os.path.join(M.CAL_DIR, "h200.json")
        with open(path) as f:
            data = json.load(f)
        data["constants"].update(consts)
        data["constants"].update({"decode_mma_eff_median": statistics.median(mma.values()),
                                  "decode_stream_eff_median": 1.0, "decode_fixed_eff_median": FIXED})  # fmt: skip
        data["configs"]["decode"] = {
            "mma": dict(mma),
            "stream": {t: 1.0 for t in mma},
            "fixed": {t: FIXED for t in mma},
        }
        data["decode_method"] = (
            "benchmarks/sweeps/calibrate_decode.py over decode_variants.json and the sweep's cal split"
        )
        with open(path, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        print(f"-> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
