"""The pruner's verdict on kernels tilewise did not write, from benchmarks/autotune_external.py's rows.

    python benchmarks/autotune_report.py DIR [DIR ...] [--calibration KERNEL=FILE] [--out FILE]
    # the committed file: both GPU runs' folders, FlagGems' `tilewise calibrate` file
    python benchmarks/autotune_report.py benchmarks/results/h200/autotune_external_raw \
        benchmarks/results/h200/autotune_external_raw/flaggems \
        --calibration flaggems_mm=benchmarks/results/h200/autotune_external_raw/flaggems/flaggems_mm.h200.json

Per kernel, the first CAL_SHAPES shapes of its list calibrate it (`tilewise.advise.calibrate.fit` on
the designed subset `calibrate.design` picks from them: every config on two of those shapes); the
other shapes are the verdict's. Per verdict shape:
* exhaustive_best_ms: the fastest config of the kernel's own list (every config timed on the GPU);
* top1_ms / top3_ms: the measured time of the model's first pick / the fastest of its first three
  (what triton.autotune with the pruner and top_k 1 / 3 keeps), with the kernel's calibration; the
  same with the family's built-in rates as builtin_top1_ms / builtin_top3_ms (ranked here, by the model
  as it is now), and with a `--calibration` file (`tilewise calibrate` on the GPU, its own shapes) as
  file_top1_ms / file_top3_ms;
* exhaustive_tune_s: every config's cold compile (seconds, measured in the worker processes) plus
  one do_bench at the autotuner's defaults per config (its measured mean on that GPU);
  pruned_tune_s: the same for the top 3 plus the model's ranking time on this host (top_k 1 times
  nothing: pruned_top1_tune_s is its one compile and the ranking).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(ROOT, "src"))
sys.path.insert(0, HERE)

CAL_SHAPES = 6
TOL = {"inductor_mm": 1e-2, "flaggems_mm": 1e-2, "liger_dyt": 1e-2}  # relative to max |reference|


def _named(torch, kernel: str, s: dict) -> dict:
    dt = torch.float16 if s["dtype"] == "fp16" else torch.bfloat16
    if "rows" in s:
        x = torch.empty(s["rows"], s["cols"], dtype=dt, device="meta")
        return {"X": x, "N": s["cols"], "HAVE_BETA": True}
    a = torch.empty(s["m"], s["k"], dtype=dt, device="meta")
    b = torch.empty(s["k"], s["n"], dtype=dt, device="meta")
    if kernel == "flaggems_mm":
        return {"A": a, "B": b, "M": s["m"], "N": s["n"], "K": s["k"]}
    return {"a_ptr": a, "b_ptr": b, "M": s["m"], "N": s["n"], "K": s["k"]}


def _configs(meta_k: dict, rows: list[dict]) -> dict[int, dict]:
    """config index -> keyword arguments, read back from the rows' tags ('NAME: value, ...')."""
    out = {}
    for r in rows:
        kv = {}
        for part in r["tag"].split(", "):
            k, v = part.split(": ")
            if v in ("None",):
                continue
            kv[k] = int(v) if v.lstrip("-").isdigit() else v
        kv.pop("ir_override", None)
        out[r["config"]] = kv
    return out


def main(argv=None) -> int:
    import torch

    from tilewise.advise import calibrate as C
    from tilewise.advise.autotune import rank

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "dirs", nargs="+", help="folders of external.jsonl + external_meta.json (a later one's kernel wins)"
    )
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "h200", "autotune_external.json"))
    ap.add_argument("--calibration", action="append", default=[], metavar="KERNEL=FILE",
                    help="a `tilewise calibrate` file of KERNEL: its picks as file_top1_ms / file_top3_ms")  # fmt: skip
    a = ap.parse_args(argv)
    import autotune_external as X

    runs: dict[str, tuple[dict, list[dict], str]] = {}  # kernel -> (its run's meta, its rows, its folder)
    for d in a.dirs:
        with open(os.path.join(d, "external_meta.json")) as f:
            m = json.load(f)
        rs = [json.loads(x) for x in open(os.path.join(d, "external.jsonl"))]
        for kernel, km in m["kernels"].items():
            if "error" not in km or kernel not in runs:
                runs[kernel] = (m, [r for r in rs if r.get("kernel") == kernel], os.path.relpath(d, ROOT))
    files = dict(x.split("=", 1) for x in a.calibration)
    out_rows, summary, cals = [], {}, {}
    metas = []
    for kernel, (meta, rows, raw) in runs.items():
        km = meta["kernels"][kernel]
        cmd = "python " + meta["command"].replace(meta["command"].split("--out ")[1].split()[0], raw)
        tags = {"gpu": meta["gpu"], "date": meta["date"], "torch": meta["torch"], "triton": meta["triton"],
                "command": cmd, "commit": meta["commit"]}  # fmt: skip
        metas.append({"kernels": [kernel], **tags, "folder": raw})
        if "error" in km:
            summary[kernel] = {"error": km["error"]}
            continue
        krows = [r for r in rows if r.get("kernel") == kernel and "config" in r]
        cfgs = _configs(km, krows)
        sp_desc = _desc(X, kernel)
        shapes = km["shapes"]
        key = lambda s: json.dumps(s, sort_keys=True)
        idx = {key(s): i for i, s in enumerate(shapes)}
        table: dict[int, dict[int, dict]] = {}
        for r in krows:
            if "ms" in r:
                table.setdefault(idx[key(r["shape"])], {})[r["config"]] = r
        # calibration: the designed subset of the first CAL_SHAPES shapes
        pairs = C.design(len(cfgs), CAL_SHAPES)
        cal_rows = []
        for ci, si in pairs:
            r = table.get(si, {}).get(ci)
            if r is not None:
                cal_rows.append({"kernel": sp_desc.name, "gpu": meta["gpu"], "config": cfgs[ci],
                                 "shape": shapes[si], "ms": r["ms"]})  # fmt: skip
        cal = C.fit(sp_desc, cal_rows, named_of=lambda s, kernel=kernel: _named(torch, kernel, s))
        cals[kernel] = cal
        from tilewise.advise.autotune import load_calibration

        file_cal = load_calibration(os.path.join(ROOT, files[kernel]), sp_desc) if kernel in files else None
        ordered = [cfgs[ci] for ci in sorted(cfgs)]

        def order_of(calibration, named, ordered=ordered, cfgs=cfgs, desc=sp_desc):
            return [sorted(cfgs)[ordered.index(c)] for _ms, c in rank(desc, ordered, named, calibration=calibration)]

        bench_s = statistics.fmean(km["do_bench_s"]) if km.get("do_bench_s") else 0.125
        k_rows = []
        for si, s in enumerate(shapes):
            if si < CAL_SHAPES or si not in table:
                continue
            t = table[si]
            ok = {ci: r for ci, r in t.items() if not r.get("nan") and r.get("rel_err", 1) <= TOL[kernel]}
            if not ok:
                continue
            best = min(r["ms"] for r in ok.values())
            named = _named(torch, kernel, s)
            t0 = time.perf_counter()
            ranked = rank(sp_desc, ordered, named, calibration=cal)
            model_s = time.perf_counter() - t0
            order = [sorted(cfgs)[ordered.index(c)] for _ms, c in ranked]
            b_order = order_of(None, named)  # the family's built-in rates, ranked by the model as it is now
            f_order = order_of(file_cal, named) if file_cal else None

            def ms_of(ci, t=t, ok=ok):
                r = t.get(ci)
                return r["ms"] if r is not None and ci in ok else float("inf")

            comp = {ci: (r.get("compile_s") if isinstance(r.get("compile_s"), (int, float)) else 0.0)
                    for ci, r in t.items()}  # fmt: skip
            exh = sum(comp.values()) + bench_s * len(t)
            pr3 = sum(comp.get(ci, 0.0) for ci in order[:3]) + 3 * bench_s + model_s
            pr1 = comp.get(order[0], 0.0) + model_s
            k_rows.append({
                "kernel": kernel, "source": km["source"], "shape": s, "configs": len(t),
                "exhaustive_best_ms": best, "top1_ms": ms_of(order[0]), "top3_ms": min(ms_of(c) for c in order[:3]),
                "builtin_top1_ms": ms_of(b_order[0]), "builtin_top3_ms": min(ms_of(c) for c in b_order[:3]),
                **({"file_top1_ms": ms_of(f_order[0]), "file_top3_ms": min(ms_of(c) for c in f_order[:3])}
                   if f_order else {}),
                "exhaustive_tune_s": round(exh, 3), "pruned_tune_s": round(pr3, 3),
                "pruned_top1_tune_s": round(pr1, 3),
                **tags,
                "picks_rel_err": max(t[c].get("rel_err", 0.0) for c in order[:3] if c in t),
            })  # fmt: skip
        out_rows += k_rows
        summary[kernel] = _figures(k_rows)
        summary[kernel]["calibration"] = {k: cal[k] for k in ("kept", "rates", "timings", "held_out_error")}
        summary[kernel]["calibration"]["own_config_rates"] = len(cal["configs"])
        if file_cal:
            summary[kernel]["calibration_file"] = {
                "file": files[kernel], "rates": file_cal["rates"], "own_config_rates": len(file_cal["configs"]),
                "timings": file_cal["timings"], "held_out_error": file_cal["held_out_error"],
                "top3_within_2pct": _share(k_rows, "file_top3_ms", 0.02),
                "top1_within_5pct": _share(k_rows, "file_top1_ms", 0.05),
            }  # fmt: skip
    sha = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    meta = runs[next(iter(runs))][0]
    calib = "".join(f" --calibration {x}" for x in a.calibration)
    measured = sorted({m["commit"][:7] for m in metas})
    doc: dict = {
        # the GPU rows are of the commits that ran them; the picks are the model's at `reproduce`'s commit
        "history": True,
        "why": f"GPU rows measured at {', '.join(measured)} (meta.runs); the pruner's picks, calibrations and "
        "figures recomputed on the CPU by benchmarks/autotune_report.py at the commit meta.reproduce names.",
        "meta": {
            "command": metas[0]["command"],
            "runs": metas,
            "reproduce": f"python benchmarks/autotune_report.py {' '.join(os.path.relpath(d, ROOT) for d in a.dirs)}"
            f"{calib} --out {os.path.relpath(a.out, ROOT)}  # on the CPU, commit {sha}, after the GPU commands above",
            **{k: meta[k] for k in ("gpu", "torch", "triton", "python", "host_cpu", "date", "commit", "seed")},
            "evidence": meta.get("evidence"),
            "calibration_shapes": f"the first {CAL_SHAPES} shapes of each kernel's list (not in rows)",
            "summary": summary,
        },
        "rows": out_rows,
    }
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(json.dumps(summary, indent=1))
    return 0


def _share(rows: list[dict], key: str, tol: float) -> float:
    return sum(r[key] <= r["exhaustive_best_ms"] * (1 + tol) for r in rows) / len(rows) if rows else float("nan")


def _figures(rows: list[dict]) -> dict:
    n = len(rows)
    if not n:
        return {"shapes": 0}

    def share(key, tol):
        return sum(r[key] <= r["exhaustive_best_ms"] * (1 + tol) for r in rows) / n

    return {
        "shapes": n,
        "top3_within_2pct": share("top3_ms", 0.02),
        "top1_within_5pct": share("top1_ms", 0.05),
        "builtin_top3_within_2pct": share("builtin_top3_ms", 0.02),
        "builtin_top1_within_5pct": share("builtin_top1_ms", 0.05),
        "top1_ratio_median": statistics.median(r["top1_ms"] / r["exhaustive_best_ms"] for r in rows),
        "top1_ratio_worst": max(r["top1_ms"] / r["exhaustive_best_ms"] for r in rows),
        "tune_time_ratio": sum(r["pruned_tune_s"] for r in rows) / sum(r["exhaustive_tune_s"] for r in rows),
        "picks_rel_err_max": max(r["picks_rel_err"] for r in rows),
    }


def _desc(X, kernel: str):
    from tilewise.advise.kernel import describe

    if kernel == "liger_dyt":
        return describe("stream", name="liger_kernel.dyt_fwd", meta={"BLOCK_N": "block_n"}, dtype_from="X",
                        bytes_per_program=X.dyt_bytes, programs=X.dyt_programs,
                        elements_per_program=lambda a, k: k["BLOCK_N"])  # fmt: skip
    if kernel == "flaggems_mm":
        import autotune_targets

        return autotune_targets.FLAGGEMS_DESC
    import matmul as ex

    return ex.DESC


if __name__ == "__main__":
    sys.exit(main())
