"""Per-config rates of the Gluon GEMM for the time model, from the sweep of its space, and the model's error.

    python benchmarks/sweeps/calibrate_gluon.py [--sweep tests/data/sweeps/h200] [--gpu h200] [--check]
        # -> src/tilewise/model/calibration/<gpu>_gemm_gluon.json (--out FILE elsewhere; --check: print, write nothing)

The rows are `sweep.py --family gemm_gluon`: every config of `advise.space.gemm_gluon_space` on the 152 GEMM
problems, timed as the Triton kernel's rows in gemm.jsonl were (CUDA graphs of rotated operand copies,
alternating rounds), so the two kernels' models are fitted in one frame and the dispatch's comparison of
their predictions is the comparison the GPU made. The cuBLAS rows of the two runs are printed side by side as
the check of that frame.

Like calibrate.py for the Triton kernel, each config (stream-K configs included: their dealt-out main loop
runs at rates of its own) gets an MMA efficiency, a stream efficiency and a fixed-cost scale, chosen on the
grids of `calibrate.fit_config` to minimise the mean |log(predicted / measured)| over the calibration split
(problems.split_of == "cal"), and its cost of rows that are not 128-byte aligned (predict's misaligned_rows)
from MISALIGNED, the value that with its three rates fits those problems best. The held-out split ("val") is
only scored.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from collections import defaultdict

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

from calibrate import FIXED, STREAM, fit_config, fit_row  # noqa: E402  (the same folder: the Triton kernel's fit)

from tilewise.model import predict as M  # noqa: E402
from tilewise.model.tiles import gemm_gluon_tag  # noqa: E402

# The Gluon configs' MMA rates run past the Triton grid's 1.0: the model's peak is the sustained clock under
# Tensor-Core load (calib.json), which the warp-specialized main loop of 128 x 256 tiles beats on short bursts
# (gco128x256x64_g8_st3 8192^3 nn: 1382 us, the fit's top of 1.0 predicted 1455)
MMA = np.geomspace(0.1, 1.25, 30)
MISALIGNED = (0.0, 0.15, 0.3, 0.5, 0.8, 1.2, 1.6)


def parse_tag(tag: str) -> dict:
    """`model.tiles.gemm_gluon_tag` read back: gco128x256x64_g8_st3[_e2][_sk] -> the advisor's config dict."""
    sched = {"gco": "cooperative", "gpp": "pingpong", "gsg": "single"}[tag[:3]]
    tile, g, st, *rest = tag[3:].split("_")
    bm, bn, bk = (int(x) for x in tile.split("x"))
    c = {"schedule": sched, "block_m": bm, "block_n": bn, "block_k": bk, "group_m": int(g[1:]),
         "num_stages": int(st[2:])}  # fmt: skip
    if rest and rest[0].startswith("e") and rest[0][1:].isdigit():
        c["epilogue_parts"] = int(rest.pop(0)[1:])
    if rest == ["sk"]:
        c["stream_k"] = True
    elif rest:
        raise ValueError(f"a Gluon GEMM tag ends in _stS, then _eP and _sk if any, got {tag!r}")
    return c


def load(sweep: str) -> tuple[dict, dict, dict]:
    """({tag: [row, ...]} of the timed space rows, {key: cuBLAS ms} of this run, the same of gemm.jsonl's)."""
    by: dict = defaultdict(list)
    cublas, cublas_triton = {}, {}
    with open(os.path.join(sweep, "gemm_gluon.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if "ms" not in r:
                continue
            if r["source"] == "space":
                assert gemm_gluon_tag(r["config"]) == r["tag"], r["tag"]
                by[r["tag"]].append(r)
            elif r["source"] == "cublas":
                cublas[r["key"]] = r["ms"]
    with open(os.path.join(sweep, "gemm.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("source") == "cublas" and "ms" in r:
                cublas_triton[r["key"]] = r["ms"]
    return by, cublas, cublas_triton


def raw_terms(rows: list[dict], gpu: str, misaligned: float) -> list[tuple]:
    """`calibrate.fit_config`'s rows: the model's terms at rates 1 (and this misaligned cost), and the time."""
    one = {"mma": 1.0, "stream": 1.0, "fixed": 1.0, "misaligned": misaligned}
    pw = M.machine(gpu).overlap_p
    return [fit_row(M.gemm_gluon(r["problem"], r["config"], gpu, efficiency=one), r["ms"], pw) for r in rows]


def fit(rows: list[dict], gpu: str) -> dict:
    """One config's rates over its calibration rows."""
    best = None
    for mis in MISALIGNED:
        m, s, f, loss = fit_config(raw_terms(rows, gpu, mis), MMA, STREAM, FIXED)
        if best is None or loss < best[0] - 1e-9:
            best = (loss, {"mma": round(m, 4), "stream": round(s, 4), "fixed": f, "misaligned": mis})
    assert best is not None
    return best[1]


def errors(rows: list[dict], gpu: str, rates: dict) -> list[float]:
    """log(predicted / measured) per row at these rates."""
    return [math.log(M.gemm_gluon(r["problem"], r["config"], gpu, efficiency=rates).ms / r["ms"]) for r in rows]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sweep", default=os.path.join(ROOT, "tests", "data", "sweeps", "h200"))
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--check", action="store_true", help="print the fit and its errors, write nothing")
    ap.add_argument(
        "--out", default="", help="write here (default src/tilewise/model/calibration/<gpu>_gemm_gluon.json)"
    )
    a = ap.parse_args(argv)
    by, cublas, cublas_triton = load(a.sweep)
    shared = sorted(set(cublas) & set(cublas_triton))
    frame = [math.log(cublas[k] / cublas_triton[k]) for k in shared]
    print(f"cuBLAS in this run against gemm.jsonl's, {len(frame)} problems: median log ratio "
          f"{statistics.median(frame):+.3f}, |log| p90 {sorted(abs(x) for x in frame)[int(0.9 * len(frame))]:.3f}")  # fmt: skip
    configs, held, cal_errs = {}, [], []
    for tag, rows in sorted(by.items()):
        cal = [r for r in rows if r["split"] == "cal"]
        val = [r for r in rows if r["split"] == "val"]
        rates = fit(cal, a.gpu)
        configs[tag] = rates
        ec, ev = errors(cal, a.gpu, rates), errors(val, a.gpu, rates)
        cal_errs += ec
        held += ev
        print(f"{tag:26s} cal {len(cal):3d} val {len(val):3d}  mma {rates['mma']:.3f} stream {rates['stream']:.3f} "
              f"fixed {rates['fixed']} misaligned {rates['misaligned']}  median |error| cal "
              f"{statistics.median(abs(math.expm1(e)) for e in ec):.1%} val {statistics.median(abs(math.expm1(e)) for e in ev):.1%}")  # fmt: skip
    pct = sorted(abs(math.expm1(e)) for e in held)
    print(f"held out: {len(pct)} (problem, config) rows, median |error| {statistics.median(pct):.1%}, "
          f"p90 {pct[int(0.9 * len(pct))]:.1%}, within 10%: {sum(x <= 0.1 for x in pct) / len(pct):.0%}; "
          f"calibration split {statistics.median(abs(math.expm1(e)) for e in cal_errs):.1%}")  # fmt: skip
    if a.check:
        return 0
    with open(os.path.join(a.sweep, "gemm_gluon_meta.json")) as f:
        meta = json.load(f)
    med = {k: statistics.median(v[k] for v in configs.values()) for k in ("mma", "stream", "fixed", "misaligned")}
    out = {
        "gpu": meta.get("gpu"),
        "source": os.path.relpath(os.path.join(a.sweep, "gemm_gluon.jsonl"), ROOT),
        "method": __doc__.strip().splitlines()[0],
        "measured": {k: meta.get(k) for k in ("date", "torch", "triton", "host_cpu", "commit")},
        "configs": configs,
        "medians": med,
        "held_out": {
            "rows": len(pct),
            "median_abs_error": round(statistics.median(pct), 4),
            "p90_abs_error": round(pct[int(0.9 * len(pct))], 4),
        },
    }
    dst = a.out or os.path.join(ROOT, "src", "tilewise", "model", "calibration", f"{a.gpu}_gemm_gluon.json")
    with open(dst, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {os.path.relpath(dst, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
