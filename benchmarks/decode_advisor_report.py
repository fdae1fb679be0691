"""The decode advisor's top-1 against the measured variants (CPU only): per problem of decode_variants.json, the
config the time model ranks first, its measured time, the best measured column and SDPA; then the summary.

    python benchmarks/decode_advisor_report.py              # the advisor's space (its tiles and split counts)
    python benchmarks/decode_advisor_report.py --all        # every measured column (three more tiles, more counts)

benchmarks/results/h200/decode_variants.json timed each of the decode sweep's 25 problems at ~55 (key tile,
split count, merge placement) columns side by side in CUDA graphs (`benchmarks/probes/decode_variants.py`). Here
`tilewise.model.predict`'s decode family prices every column (its own merge placement) and the column it
predicts fastest is the model's pick: a hit within 1% (2%) when that column measured within 1% (2%) of the
fastest one; the column the kernel runs (`plan_column`) is printed too. The advisor's space is `tilewise.advise.space.DECODE_TILES` x `DECODE_SPLITS`; ragged rows are
priced with their total keys (`total_keys`), which the kernel itself does not know (it plans at the longest
length). The model error is |predicted / measured - 1| over the same columns.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from typing import Any

from tilewise.advise import default_config
from tilewise.advise.space import DECODE_SPLITS, DECODE_TILES
from tilewise.model.predict import decode_merge, predict
from tilewise.util import cdiv

VARIANTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "h200", "decode_variants.json")


def _splits_of_space(seq_len: int, block_n: int) -> set[int]:
    """The split counts the kernel runs for the advisor's DECODE_SPLITS (a split keeps at least one key tile)."""
    out = set()
    for s in DECODE_SPLITS:
        if s == 1 or cdiv(seq_len, s) >= block_n:
            out.add(cdiv(seq_len, cdiv(cdiv(seq_len, s), block_n) * block_n))
    return out


def problems(path: str = VARIANTS) -> list[dict[str, Any]]:
    """Each row of decode_variants.json as {shape, problem, sdpa_ms, columns: [{name, config, ms, space}]}: the
    graph medians (ms per call), the problem with `total_keys` where the lengths are ragged."""
    with open(path) as f:
        rows = json.load(f)["rows"]
    out = []
    for r in rows:
        p = dict(r["problem"])
        if r["total_keys"] < p["batch"] * p["seq_len"]:
            p["total_keys"] = r["total_keys"]
        cols = []
        for name, c in r["columns"].items():
            us = r["us"].get(name + "_graph")
            if not us:
                continue
            bn, w, st = c["tile"]
            cfg = {"block_n": bn, "num_warps": w, "num_stages": st, "num_splits": c["splits"], "merge": c["merge"]}
            space = tuple(c["tile"]) in DECODE_TILES and c["splits"] in _splits_of_space(p["seq_len"], bn)
            cols.append({"name": name, "config": cfg, "ms": us[0] * 1e-3, "space": space})
        out.append({"shape": r["shape"], "problem": p, "sdpa_ms": r["us"]["sdpa_graph"][0] * 1e-3, "columns": cols})
    return out


def plan_column(problem: dict[str, Any], gpu: str = "h200") -> str:
    """The column `decode_attention` runs: the advisor's top-1 over its whole space (`default_config`, at the
    longest length: the kernel does not read device-side lengths) at the model's merge placement for graphs."""
    p = {k: v for k, v in problem.items() if k != "total_keys"}
    c = default_config("decode", p, gpu)
    L, bn = p["seq_len"], c["block_n"]
    splits = cdiv(L, cdiv(cdiv(L, c["num_splits"]), bn) * bn)
    return f"n{bn}w{c['num_warps']}s{c['num_stages']}_x{splits}_{decode_merge(p, c, gpu, graph=True)}"


def evaluate(
    probs: list[dict[str, Any]],
    *,
    space: bool = True,
    gpu: str = "h200",
    efficiency: dict[str, dict[str, float]] | None = None,
    constants: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Per problem the model's pick and the best measured column; the summary: hits within 1 / 2 / 5% and the
    median (p90) model error over the columns. `efficiency` ({config tag: {"mma": ..}}) and `constants` override
    the calibration (benchmarks/sweeps/calibrate_decode.py fits with them)."""
    per, errs = [], []
    for pr in probs:
        cols = [c for c in pr["columns"] if c["space"] or not space]
        priced = []
        for c in cols:
            tag = "n{block_n}_w{num_warps}_st{num_stages}_s1".format(**c["config"])
            eff = (efficiency or {}).get(tag)
            ms = predict("decode", pr["problem"], c["config"], gpu, efficiency=eff, constants=constants).ms
            priced.append((ms, c))
            errs.append(abs(ms / c["ms"] - 1))
        pred, pick = min(priced, key=lambda x: (x[0], x[1]["name"]))
        best = min(cols, key=lambda c: c["ms"])
        plan = plan_column(pr["problem"], gpu)
        plan_ms = next((c["ms"] for c in pr["columns"] if c["name"] == plan), None)
        per.append({"shape": pr["shape"], "pick": pick["name"], "pick_predicted_ms": pred, "pick_ms": pick["ms"],
                    "best": best["name"], "best_ms": best["ms"], "sdpa_ms": pr["sdpa_ms"],
                    "loss": pick["ms"] / best["ms"] - 1, "ragged": "total_keys" in pr["problem"],
                    "plan": plan, "plan_ms": plan_ms})  # fmt: skip
    errs.sort()
    return {
        "problems": len(per),
        "within_1pct": sum(r["loss"] <= 0.01 for r in per),
        "within_2pct": sum(r["loss"] <= 0.02 for r in per),
        "within_5pct": sum(r["loss"] <= 0.05 for r in per),
        "columns": len(errs),
        "error_median": statistics.median(errs),
        "error_p90": errs[int(0.9 * (len(errs) - 1))],
        "per_problem": per,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--all", action="store_true", help="rank every measured column, not the advisor's space only")
    ap.add_argument("--variants", default=VARIANTS)
    a = ap.parse_args(argv)
    v = evaluate(problems(a.variants), space=not a.all)
    print(f"{'problem':34s} {'model pick':22s} {'pred':>7s} {'meas':>7s}  {'best measured':22s} {'best':>7s}"
          f" {'loss':>6s} {'SDPA':>7s}  (us, CUDA graphs)")  # fmt: skip
    for r in v["per_problem"]:
        print(f"{r['shape']:34s} {r['pick']:22s} {r['pick_predicted_ms'] * 1e3:7.1f} {r['pick_ms'] * 1e3:7.1f}  "
              f"{r['best']:22s} {r['best_ms'] * 1e3:7.1f} {r['loss'] * 100:5.1f}% {r['sdpa_ms'] * 1e3:7.1f}")  # fmt: skip
    plans = [r for r in v["per_problem"] if r["plan_ms"] is not None]
    uniform = [r for r in plans if not r["ragged"]]
    print(f"the kernel's plan (the advisor's top-1 over its whole space) is the model's pick on "
          f"{sum(r['plan'] == r['pick'] for r in uniform)} of {len(uniform)} uniform problems; ragged (planned at "
          "the longest length): " + ", ".join(f"{r['shape'].split(' D')[0]} {r['plan']} {r['plan_ms'] * 1e3:.1f} us"
                                              for r in plans if r["ragged"]))  # fmt: skip
    n = v["problems"]
    print(f"top-1 within 1% of the best measured: {v['within_1pct']} of {n}, within 2%: {v['within_2pct']}, "
          f"within 5%: {v['within_5pct']}; model error over {v['columns']} columns: median "
          f"{v['error_median']:.1%}, p90 {v['error_p90']:.1%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
