"""The advisor's verdict on the sweep's held-out problems (`tilewise advise --validate`).

For each family, over the problems of the held-out split (benchmarks/sweeps/problems.split_of ==
"val": the calibration never read them):
* top-1: the advisor's first choice, its measured time against the best measured config of the
  space; the share within 5%;
* error: |predicted - measured| / measured over every measured config, median and 90th percentile;
* the same for the comparison points the sweep timed beside the space: nvidia-matmul-heuristics'
  Triton top-1 (GEMM; its own runtime estimate as its prediction) and the previous hand rules (the
  kernels' choose_config; the roofline floor as their prediction, which is what benchmark rows
  carried as `predicted_ms`);
* exhaustive autotune's cost: the sweep's measured compile seconds of every config plus triton's
  do_bench default (25 ms warm-up + 100 ms of repetitions) per config, against the advisor's 0;
* GEMM: the advisor's top-1 against cuBLAS (CUDA graphs, the same sweep), and the kernel's best.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
from typing import Any

from tilewise import gpus as _gpus
from tilewise.advise import advise, fixtures, space
from tilewise.errors import InputError
from tilewise.model import roofline, traffic
from tilewise.model.predict import predict

DO_BENCH_S = 0.125
# The calibration anchors: always in the calibration split (calibrate.py reads the per-config MMA rate and the
# memory-bound stream rate there), named before any model constant was fitted. benchmarks/sweeps/problems.py
# reads them from here. "more" are GEMM shapes held in the calibration split beside the two anchors.
CAL_ANCHORS: dict[str, dict[str, Any]] = {
    "gemm": {"mma": "8192x8192x8192_bf16_nn", "stream": "1x28672x4096_bf16_nt",
             "more": ("8192x8192x8192_fp16_nt", "4096x28672x4096_bf16_nt", "64x28672x4096_bf16_nt")},
    "attention": {"mma": {64: "b4h32kv32q4096k4096d64n_bf16", 128: "b4h32kv32q4096k4096d128n_bf16",
                          256: "b2h16kv16q4096k4096d256n_bf16"}},
    "decode": {"stream": "b1h32kv8L131072d128_bf16"},
    "grouped": {"mma": "e8r4096n8192k8192_bf16", "stream": "e128r8n1536k2048_bf16"},
}  # fmt: skip


def _keys(v: object) -> set[str]:
    if isinstance(v, str):
        return {v}
    if isinstance(v, dict):
        return set().union(*(_keys(x) for x in v.values())) if v else set()
    if isinstance(v, (tuple, list)):
        return set().union(*(_keys(x) for x in v)) if v else set()
    return set()


# every anchor key: the calibration split's named shapes (the rest of it is one problem in four by hash)
CAL_SHAPES = frozenset(_keys(CAL_ANCHORS))


def split_of(key: str) -> str:
    if key in CAL_SHAPES:
        return "cal"
    return "cal" if int(hashlib.sha1(key.encode()).hexdigest(), 16) % 4 == 0 else "val"


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    i = min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))
    return xs[i]


def _floor_ms(family: str, p: dict[str, Any]) -> float:
    """The roofline floor the benchmark rows carried as `predicted_ms` (the previous 'model')."""
    if family == "gemm":
        f, b = traffic.gemm_flops(p["m"], p["n"], p["k"]), traffic.gemm_bytes(p["m"], p["n"], p["k"], p["dtype"])
    elif family == "attention":
        f = traffic.attention_flops(p["batch"], p["heads"], p["seq_q"], p["seq_k"], p["head_dim"], p["causal"])
        b = traffic.attention_bytes(
            p["batch"], p["heads"], p["kv_heads"], p["seq_q"], p["seq_k"], p["head_dim"], p["dtype"]
        )
    elif family == "decode":
        lens = [p["seq_len"]] * p["batch"]
        f = traffic.decode_flops(lens, p["heads"], p["head_dim"])
        b = traffic.decode_bytes(lens, p["heads"], p["kv_heads"], p["head_dim"], p["dtype"])
    else:
        rows = [p["rows_per_expert"]] * p["experts"]
        f = traffic.grouped_gemm_flops(rows, p["k"], p["n"])
        b = traffic.grouped_gemm_bytes(rows, p["k"], p["n"], p["dtype"])
    return roofline.time("h200", f, b, p["dtype"]).time_s * 1e3


def _compile_seconds(directory: str) -> dict[str, Any]:
    path = os.path.join(directory, "compile.jsonl")
    out: dict[str, Any] = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            secs = [v for v in r.get("compile_s", {}).values() if isinstance(v, (int, float))]
            out[r.get("key")] = (sum(secs), len(secs))
    return out


def split_figures(family: str, recs: dict[str, Any], gpu: str, split: str) -> dict[str, Any]:
    """top-1 within 5% and the error figures over the problems of one split (the calibration split's are the
    in-sample figures, printed beside the held-out verdict)."""
    top1, errs = [], []
    for key, rec in sorted(recs.items()):
        if split_of(key) != split:
            continue
        adv = advise(family, rec.problem, gpu, top_k=1)[0]
        tag = space.TAGS[family](adv.config)
        if tag in rec.space:
            top1.append(rec.space[tag] / rec.best()[1])
        for t, ms in rec.space.items():
            errs.append(abs(predict(family, rec.problem, rec.configs[t], gpu).ms - ms) / ms)
    return {
        "split": split,
        "problems": len(top1),
        "top1_within_5pct": sum(r <= 1.05 for r in top1) / len(top1) if top1 else float("nan"),
        "error_median": statistics.median(errs) if errs else float("nan"),
        "error_p90": _pct(errs, 0.9),
    }


def defaults_vs_cublas(directory: str | None = None, gpu: str = _gpus.DEFAULT_GPU) -> dict[str, Any]:
    """The advisor's top-1 (every GEMM's default config) against cuBLAS over every problem of the sweep (both
    splits): the sweep times every config of the space and cuBLAS side by side (CUDA graphs), so the default's
    measured time is read from the fixture without a GPU."""
    ratios, best = [], []
    for _key, rec in sorted(fixtures.load("gemm", directory).items()):
        if "cublas" not in rec.others:
            continue
        tag = space.TAGS["gemm"](advise("gemm", rec.problem, gpu, top_k=1)[0].config)
        if tag not in rec.space:
            continue
        cms = rec.others["cublas"][1]
        ratios.append(cms / rec.space[tag])
        best.append(cms / rec.best()[1])
    return {
        "problems": len(ratios),
        "advisor_median": statistics.median(ratios),
        "advisor_min": min(ratios),
        "advisor_below_0.8": sum(r < 0.8 for r in ratios),
        "kernel_best_median": statistics.median(best),
        "kernel_best_min": min(best),
        "kernel_best_below_0.8": sum(r < 0.8 for r in best),
    }


def family_verdict(family: str, directory: str | None = None, gpu: str = _gpus.DEFAULT_GPU) -> dict[str, Any]:
    recs = fixtures.load(family, directory)
    comp = _compile_seconds(directory or fixtures.DEFAULT_DIR)
    nmh_pred = {}
    if family == "gemm":
        path = os.path.join(fixtures.ROOT, "benchmarks", "sweeps", "nmh_gemm.json")
        if os.path.exists(path):
            with open(path) as f:
                nmh_pred = {k: v["predicted_ms"] for k, v in json.load(f)["configs"].items()}
    top1, errs, per = [], [], []
    nmh_top, nmh_err, hand_top, hand_err = [], [], [], []
    vs_cublas, best_vs_cublas = [], []
    prev_top, prev_speed = [], []
    tune_s, configs = 0.0, 0
    for key, rec in sorted(recs.items()):
        if split_of(key) != "val":
            continue
        best_tag, best_ms = rec.best()
        adv = advise(family, rec.problem, gpu, top_k=1)[0]
        tag = space.TAGS[family](adv.config)
        if tag not in rec.space:
            raise InputError(f"{family} {key}: the advisor's top-1 {tag} was not measured in the sweep")
        ratio = rec.space[tag] / best_ms
        top1.append(ratio)
        for t, ms in rec.space.items():
            pred = predict(family, rec.problem, rec.configs[t], gpu).ms
            errs.append(abs(pred - ms) / ms)
        if "nmh" in rec.others:
            _nt, nms, _ = rec.others["nmh"]
            nmh_top.append(nms / best_ms)
            if key in nmh_pred:
                nmh_err.append(abs(nmh_pred[key] - nms) / nms)
        if "default" in rec.others:  # the kernel's default when the sweep ran (the previous calibration's top-1)
            prev_top.append(rec.others["default"][1] / best_ms)
            prev_speed.append(rec.others["default"][1] / rec.space[tag])
        if "hand" in rec.others:
            hms = rec.others["hand"][1]
            hand_top.append(hms / best_ms)
            hand_err.append(abs(_floor_ms(family, rec.problem) - hms) / hms)
        if "cublas" in rec.others:
            cms = rec.others["cublas"][1]
            vs_cublas.append(cms / rec.space[tag])
            best_vs_cublas.append(cms / best_ms)
        cs, n = comp.get(key, (0.0, 0))
        tune_s += cs + DO_BENCH_S * len(rec.space)
        configs += len(rec.space)
        per.append({"key": key, "advisor": tag, "advisor_ms": rec.space[tag], "best": best_tag, "best_ms": best_ms,
                    "ratio": ratio, "cublas_ms": rec.others.get("cublas", (None, None))[1]})  # fmt: skip
    n = len(top1)
    out = {
        "family": family,
        "problems": n,
        "configs_measured": len(errs),
        "top1_within_5pct": sum(r <= 1.05 for r in top1) / n if n else float("nan"),
        "top1_ratio_median": statistics.median(top1) if top1 else float("nan"),
        "top1_ratio_worst": max(top1) if top1 else float("nan"),
        "error_median": statistics.median(errs) if errs else float("nan"),
        "error_p90": _pct(errs, 0.9),
        "autotune_device_s": tune_s,
        "autotune_configs": configs,
        "advisor_device_s": 0.0,
        "per_problem": per,
        "calibration_split": split_figures(family, recs, gpu, "cal"),
    }
    if hand_top:
        out["hand"] = {
            "top1_within_5pct": sum(r <= 1.05 for r in hand_top) / len(hand_top),
            "error_median": statistics.median(hand_err),
            "error_p90": _pct(hand_err, 0.9),
            "prediction": "roofline floor (the benchmark rows' predicted_ms)",
        }
    if prev_top:
        out["default_at_sweep"] = {
            "top1_within_5pct": sum(r <= 1.05 for r in prev_top) / len(prev_top),
            "advisor_speedup_median": statistics.median(prev_speed),
            "advisor_speedup_geomean": math.exp(statistics.fmean(math.log(x) for x in prev_speed)),
            "what": "the kernel's default (config=None) when the sweep ran: the previous calibration's top-1",
        }
    if nmh_top:
        out["nmh"] = {
            "top1_within_5pct": sum(r <= 1.05 for r in nmh_top) / len(nmh_top),
            "error_median": statistics.median(nmh_err) if nmh_err else float("nan"),
            "error_p90": _pct(nmh_err, 0.9),
            "prediction": "nvidia-matmul-heuristics' runtime estimate of its top-1",
        }
    if vs_cublas:
        out["vs_cublas"] = {
            "advisor_median": statistics.median(vs_cublas),
            "advisor_min": min(vs_cublas),
            "advisor_below_0.8": sum(r < 0.8 for r in vs_cublas),
            "kernel_best_median": statistics.median(best_vs_cublas),
            "kernel_best_min": min(best_vs_cublas),
            "kernel_best_below_0.8": sum(r < 0.8 for r in best_vs_cublas),
        }
    return out


def fresh_figures(family: str, directory: str, gpu: str = _gpus.DEFAULT_GPU) -> dict[str, Any]:
    """The advisor on the fresh held-out set (problems drawn at random with a recorded seed, never read by the
    calibration): every problem counts, top-1 within 5% of the best measured config, prediction error."""
    path = os.path.join(directory, f"{family}.jsonl")
    if not os.path.isfile(path):
        return {"problems": 0}
    recs = fixtures.load(family, directory)
    top1, errs, missing, nmh = [], [], 0, []
    for _key, rec in sorted(recs.items()):
        if "nmh" in rec.others:  # nvidia-matmul-heuristics' top-1 mapped to the kernel, timed beside the space
            nmh.append(rec.others["nmh"][1] / rec.best()[1])
        tag = space.TAGS[family](advise(family, rec.problem, gpu, top_k=1)[0].config)
        if tag in rec.space:
            top1.append(rec.space[tag] / rec.best()[1])
        else:
            missing += 1  # the sweep could not time the advisor's pick (an error row): not scored
        for t, ms in rec.space.items():
            errs.append(abs(predict(family, rec.problem, rec.configs[t], gpu).ms - ms) / ms)
    out: dict[str, Any] = {}
    if nmh:
        out["nmh"] = {"problems": len(nmh), "top1_within_5pct": sum(r <= 1.05 for r in nmh) / len(nmh)}
    return {
        **out,
        "problems": len(top1),
        "top1_unmeasured": missing,
        "top1_within_5pct": sum(r <= 1.05 for r in top1) / len(top1) if top1 else float("nan"),
        "top1_ratio_worst": max(top1) if top1 else float("nan"),
        "error_median": statistics.median(errs) if errs else float("nan"),
        "error_p90": _pct(errs, 0.9),
    }


def check_sweep_dir(directory: str | None) -> str:
    """The sweep fixture folder, or an InputError saying where it is expected: an installed wheel ships no
    fixtures, so `--validate` then needs `--sweep DIR` (a checkout's tests/data/sweeps/h200)."""
    d = directory or fixtures.DEFAULT_DIR
    if not os.path.isdir(d) or not os.path.isfile(os.path.join(d, "gemm.jsonl")):
        raise InputError(
            f"--validate reads the sweep's fixtures: folder {d} must exist and hold gemm.jsonl ... (an installed "
            "package ships none: pass --sweep DIR, a source checkout's tests/data/sweeps/h200), got no such folder"
        )
    return d


def verdict(
    directory: str | None = None, gpu: str = _gpus.DEFAULT_GPU, families: tuple[str, ...] = fixtures.FAMILIES
) -> dict[str, Any]:
    directory = check_sweep_dir(directory)
    meta = fixtures.meta(directory)
    out = {"sweep": {k: meta.get(k) for k in ("gpu", "date", "torch", "triton", "host_cpu", "command")},
           "families": {f: family_verdict(f, directory, gpu) for f in families}}  # fmt: skip
    if "gemm" in families:
        out["gemm_defaults_vs_cublas_all"] = defaults_vs_cublas(directory, gpu)
    fresh = os.path.join(directory, "fresh")
    if os.path.isdir(fresh):
        fm = fixtures.meta(fresh)
        out["fresh"] = {"seed": fm.get("seed"), "date": fm.get("date"),
                        "families": {f: fresh_figures(f, fresh, gpu) for f in families}}  # fmt: skip
    return out
