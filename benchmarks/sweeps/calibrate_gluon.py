"""Per-config rates of the Gluon GEMM for the time model, from the probe's timings, and the model's error.

    python benchmarks/sweeps/calibrate_gluon.py benchmarks/results/h200/gemm_gluon_probe.json \
        src/tilewise/model/calibration/h200_gemm_gluon.json [benchmarks/results/h200/gemm_vs_cublas.json]

Like calibrate.py for the Triton kernel: each config's MMA efficiency is the one at which the model
(`tilewise.model.predict.gemm_gluon`) predicts its CUDA-graph time on 8192^3 nn, its stream efficiency
the one that predicts 1 x 28672 x 4096 nt; the fixed-cost rate is the Triton kernel's median; its cost of
rows that are not 128-byte aligned the one that predicts 5000^3 nn (10,000-byte rows; the probe times the
same values in 128-byte padded rows beside it: `misaligned_cost` is the median slowdown, for the record). Every other probe shape is held out: the script prints the model's error there.

The frame: the probe's timings ran slower than the sweep's the Triton kernel's model was fitted on (8192^3
nn, the Triton kernel's top-1: 1554 us in the probe, 1415 us in tests/data/sweeps/h200/gemm.jsonl). The
dispatch compares the two kernels' predictions, so the Gluon rates are fitted to the probe's times scaled by
`frame` = the median over the probe's 16-byte-row shapes of (the Triton model's prediction of the Triton
kernel / the Triton kernel's time in the same probe row): each kernel's prediction is then in the sweep's
frame, and their ratio is the ratio the probe measured side by side.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys

from tilewise.model.predict import gemm_gluon

MMA_SHAPE, STREAM_SHAPE = "8192x8192x8192_nn", "1x28672x4096_nt"
# rows 10,000 bytes long (16- but not 128-byte aligned) against the same values in 10,112-byte rows
MISALIGNED, PADDED = "5000x5000x5000_nn", "5000x5000x5000_nnp"
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "sweeps", "h200", "gemm.jsonl")


def problem(shape: str) -> dict:
    dims, layout = shape.split("_")
    m, n, k = (int(x) for x in dims.split("x"))
    return {"m": m, "n": n, "k": k, "dtype": "bf16", "layout": layout.rstrip("p")}


def parse_tag(tag: str) -> dict:
    """`model.tiles.gemm_gluon_tag` read back: gco128x256x64_g8_st3[_sk] -> the advisor's config dict."""
    sched = {"gco": "cooperative", "gpp": "pingpong", "gsg": "single"}[tag[:3]]
    tile, g, st, *rest = tag[3:].split("_")
    bm, bn, bk = (int(x) for x in tile.split("x"))
    c = {"schedule": sched, "block_m": bm, "block_n": bn, "block_k": bk, "group_m": int(g[1:]),
         "num_stages": int(st[2:])}  # fmt: skip
    if rest == ["sk"]:
        c["stream_k"] = True
    elif rest:
        raise ValueError(f"a Gluon GEMM tag ends in _stS or _stS_sk, got {tag!r}")
    return c


def solve(fn, target: float, lo: float = 0.05, hi: float = 3.0) -> float:
    """The rate x in [lo, hi] with fn(x) = target (fn decreasing in x), by bisection in log space."""
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        if fn(mid) > target:
            lo = mid
        else:
            hi = mid
    return round(math.sqrt(lo * hi), 4)


def measured(rows: list[dict]) -> dict[tuple[str, str], float]:
    out = {}
    for r in rows:
        for tag, v in r["gluon"].items():
            if v.get("graph_ms"):
                out[(r["shape"], tag)] = v["graph_ms"]
        for tag, v in (r.get("gluon_pingpong_run") or {}).get("gluon", {}).items():
            if v.get("graph_ms"):
                out[(r["shape"], tag)] = v["graph_ms"]
    return out


def frame_factor(rows: list[dict]) -> float:
    from tilewise.advise import default_config
    from tilewise.model.predict import predict

    ratios = []
    for r in rows:
        if r["shape"].startswith("5000x5000x5000") or not r.get("triton_graph_ms"):
            continue  # (misaligned rows: the two kernels pay differently for them)
        p = problem(r["shape"])
        ratios.append(predict("gemm", p, default_config("gemm", p)).ms / r["triton_graph_ms"])
    return round(statistics.median(ratios), 4)


def fit_misaligned(configs: dict, t: dict) -> None:
    """Each config's cost of rows that are not 128-byte aligned: the one that predicts its 5000^3 time."""
    for tag, rates in configs.items():
        if (MISALIGNED, tag) in t and "mma" in rates:
            c, p = parse_tag(tag), problem(MISALIGNED)
            known = {"mma": rates["mma"], "stream": rates["stream"], "fixed": rates["fixed"]}
            rates["misaligned"] = solve(
                lambda x, p=p, c=c, known=known: -gemm_gluon(p, c, efficiency={**known, "misaligned": x}).ms,
                -t[(MISALIGNED, tag)], lo=0.001, hi=10.0,
            )  # fmt: skip


def fixture_points(path: str) -> dict:
    """The fixture rows the Gluon kernel ran (benchmarks/results/h200/gemm_vs_cublas.json), each time read in the
    sweep's frame through cuBLAS (the row's CUDA-graph time x the sweep's cuBLAS time / the row's):
    {(key, tag): (problem, ms)}."""
    cublas = {}
    with open(FIXTURES) as f:
        for line in f:
            r = json.loads(line)
            if r["source"] == "cublas":
                cublas[r["key"]] = r["ms"]
    out = {}
    for r in json.load(open(path))["rows"]:
        if r["plan"]["kernel"] != "gluon" or r["shape"] not in cublas or not r.get("ours_graph_ms"):
            continue
        ms = r["ours_graph_ms"] * cublas[r["shape"]] / r["peer_graph_ms"]
        out[(r["shape"], r["plan"]["config"])] = (r["problem"], ms)
    return out


def main(argv: list[str]) -> int:
    src, dst = argv[1], argv[2]
    data = json.load(open(src))
    frame = frame_factor(data["rows"])
    raw = measured(data["rows"])
    t = {key: ms * frame for key, ms in raw.items()}
    tags = sorted({tag for _, tag in t})
    configs = {}
    for tag in tags:
        c = parse_tag(tag)
        rates: dict[str, float] = {"fixed": 0.5}
        # every rate passed explicitly (the model would otherwise fill the others from the file being rewritten);
        # the anchors' rows are 128-byte aligned, so no misaligned cost; two rounds, as mma and stream interact
        stream = 0.85
        for _ in range(2):
            if (MMA_SHAPE, tag) not in t:
                break
            p = problem(MMA_SHAPE)
            base = {"fixed": 0.5, "misaligned": 0.0}
            rates["mma"] = solve(
                lambda x, p=p, c=c, s=stream, base=base: gemm_gluon(p, c, efficiency={**base, "mma": x, "stream": s}).ms,
                t[(MMA_SHAPE, tag)],
            )  # fmt: skip
            if (STREAM_SHAPE, tag) not in t:
                break
            p = problem(STREAM_SHAPE)
            mma = rates["mma"]
            stream = rates["stream"] = solve(
                lambda x, p=p, c=c, mma=mma, base=base: gemm_gluon(p, c, efficiency={**base, "mma": mma, "stream": x}).ms,
                t[(STREAM_SHAPE, tag)],
            )  # fmt: skip
        configs[tag] = rates
    stream_med = statistics.median(v["stream"] for v in configs.values() if "stream" in v)
    for rates in configs.values():
        rates.setdefault("stream", stream_med)
    fit_misaligned(configs, t)
    # the fixture rows the Gluon kernel ran: none is fitted, all are held out
    rows = fixture_points(argv[3]) if len(argv) > 3 else {}
    slow = [
        t[(MISALIGNED, tag)] / t[(PADDED, tag)] - 1 for tag in tags if (MISALIGNED, tag) in t and (PADDED, tag) in t
    ]
    med = {k: statistics.median(v[k] for v in configs.values() if k in v)
           for k in ("mma", "stream", "fixed", "misaligned")}  # fmt: skip
    out = {
        "gpu": data["meta"].get("gpu"),
        "source": src,
        "method": __doc__.strip().splitlines()[0],
        "measured": {k: data["meta"].get(k) for k in ("date", "torch", "triton", "cpu", "commit")},
        "configs": configs,
        "medians": med,
        "misaligned_cost": round(statistics.median(slow), 4),
        "frame": frame,
    }
    with open(dst, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    # held-out error (the calibration shapes excluded), with the file just written
    from tilewise.model import predict as _p

    _p.machine.cache_clear()
    _p.gluon_calibration.cache_clear()
    errs, errs_raw = [], []
    for (shape, tag), ms in sorted(t.items()):
        if shape in (MMA_SHAPE, STREAM_SHAPE, MISALIGNED, PADDED):
            continue
        pred = gemm_gluon(problem(shape), parse_tag(tag)).ms
        errs.append(pred / ms - 1)
        errs_raw.append(pred / raw[(shape, tag)] - 1)
        print(
            f"{shape:22s} {tag:24s} measured {ms * 1e3:8.1f} us predicted {pred * 1e3:8.1f} us ({pred / ms - 1:+.0%})"
        )
    if rows:
        ev = [gemm_gluon(p, parse_tag(tag)).ms / ms - 1 for (_key, tag), (p, ms) in sorted(rows.items())]
        print(f"fixture rows the Gluon kernel ran: {len(ev)}, median |error| "
              f"{statistics.median(abs(e) for e in ev):.1%}, within 10%: {sum(abs(e) <= 0.1 for e in ev) / len(ev):.0%}, "
              f"median signed {statistics.median(ev):+.1%}")  # fmt: skip
    a = sorted(abs(e) for e in errs)
    print(f"frame {frame}; held out: {len(a)} (shape, config) pairs, median |error| {statistics.median(a):.1%}, "
          f"within 10%: {sum(x <= 0.1 for x in a) / len(a):.0%}; against the unscaled probe times: median "
          f"|error| {statistics.median(abs(e) for e in errs_raw):.1%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
