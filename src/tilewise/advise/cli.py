"""`tilewise advise gemm|attention|decode|grouped` and `tilewise advise --validate` (no torch)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tilewise import gpus as _gpus
from tilewise.advise import advise, space, validate
from tilewise.advise import calibrate as C
from tilewise.advise.attention_backward import advise_backward, render, shipped
from tilewise.advise.problems import normalize
from tilewise.errors import InputError, cli_int
from tilewise.model.predict import calibration, gemm_gluon

ARGS = {
    "gemm": (("m", 1024), ("n", 4096), ("k", 4096)),
    "attention": (
        ("batch", 4),
        ("heads", 32),
        ("kv_heads", None),
        ("seq_q", 4096),
        ("seq_k", None),
        ("head_dim", 128),
    ),
    "decode": (("batch", 1), ("heads", 32), ("kv_heads", 8), ("seq_len", 32768), ("head_dim", 128)),
    "grouped": (("experts", 128), ("rows_per_expert", 64), ("n", 1536), ("k", 2048)),
}


# An fp32 GEMM's tl.dot runs on the Tensor Cores as tf32 (10-bit mantissas, fp32 accumulate), as torch's
# matmul does with allow_tf32: say so, since the user asked for fp32.
TF32_NOTE = "dtype fp32: the GEMM runs on the Tensor Cores as tf32 (fp32 storage, 10-bit-mantissa products, fp32 sums)"

# Options each use of the command takes beyond its kernel's sizes; anything else given is refused.
_EXTRA = {
    "gemm": ("dtype", "layout", "why"),
    "attention": ("dtype", "causal", "backward"),
    "decode": ("dtype",),
    "grouped": ("dtype",),
}
_PROBLEM_OPTS = {name for args in ARGS.values() for name, _ in args} | {"dtype", "layout", "causal", "backward", "why"}


def _refuse_unused(a: argparse.Namespace) -> None:
    """An option that does not apply is an error, not silently ignored (`advise attention --layout nt`)."""

    def given(name: str) -> bool:
        v = getattr(a, name)
        return v is not None and v is not False

    def spell(name: str) -> str:
        return "--rows" if name == "rows_per_expert" else "--" + name.replace("_", "-")

    if a.validate:
        extra = sorted(n for n in _PROBLEM_OPTS if given(n)) + (["--top"] if a.top is not None else [])
        if a.kind is not None:
            raise InputError(f"--validate takes no kernel, got {a.kind!r} (it judges every family of the sweep)")
        if extra:
            opts = ", ".join(spell(n) if not n.startswith("--") else n for n in extra)
            raise InputError(f"--validate takes only --gpu, --sweep, --per-problem and --json, got {opts}")
        if a.per_problem and not a.json:
            raise InputError(
                "--per-problem adds every problem's row to --validate --json's output; got it without --json"
            )
        return
    for opt, name in (("--sweep", "sweep"), ("--per-problem", "per_problem")):
        if given(name):
            raise InputError(f"{opt} applies only with --validate, got it with advise {a.kind or ''}".rstrip())
    if a.kind is None:
        return
    allowed = {n for n, _ in ARGS[a.kind]} | set(_EXTRA[a.kind])
    extra = sorted(n for n in _PROBLEM_OPTS - allowed if given(n))
    if extra:
        takes = ", ".join(spell(n) for n in [*(n for n, _ in ARGS[a.kind]), *_EXTRA[a.kind]])
        raise InputError(
            f"advise {a.kind} takes {takes}; got {', '.join(spell(n) for n in extra)}, which it does not use"
        )


def _problem(kind: str, a: argparse.Namespace) -> dict[str, Any]:
    p = {name: getattr(a, name) for name, _ in ARGS[kind]}
    p["dtype"] = a.dtype or "bf16"
    if kind == "gemm":
        p["layout"] = a.layout or "nn"
    if kind == "attention":
        p["causal"] = bool(a.causal)
    return {k: v for k, v in p.items() if v is not None}


def _status(gpu: str) -> str:
    g = _gpus.get(gpu)
    key = g.key
    if _gpus.is_user(g):
        return (
            f"{key}: datasheet-only, not calibrated (your GPU file's figures, never measured by tilewise; "
            "the per-config efficiencies are the H200's)"
        )
    if calibration(key):
        return f"{key}: calibrated (src/tilewise/model/calibration/{key}.json, measured on this GPU)"
    return (
        f"{key}: datasheet-only (never measured: its peaks and bandwidths are the registry's, the per-config "
        "efficiencies are the H200's)"
    )


def _run(a: argparse.Namespace) -> int:
    if a.validate:
        return _validate(a)
    if a.kind is None:
        raise InputError("advise needs a kernel: gemm, attention, decode or grouped (or --validate)")
    prob = normalize(a.kind, _problem(a.kind, a))  # the values as the model reads them: ints as ints
    if getattr(a, "backward", False):
        return _backward(a, prob)
    if getattr(a, "why", None) is not None:
        return _why(a, prob)
    out = advise(a.kind, prob, gpu=a.gpu, top_k=a.top)
    note = TF32_NOTE if a.kind == "gemm" and prob["dtype"] == "fp32" else None
    glu = _gluon_ranked(prob, a.gpu)[: a.top] if a.kind == "gemm" else []
    if a.json:
        doc: dict[str, Any] = {"kernel": a.kind, "problem": prob, "gpu": _gpus.get(a.gpu).key,
                               "status": _status(a.gpu), "notes": [note] if note else [],
                               "advice": [x.to_dict() for x in out]}  # fmt: skip
        if a.kind == "gemm":
            doc["gluon"] = [{"tag": t, "config": c, "predicted_ms": pr.ms, "binding": pr.binding} for t, c, pr in glu]
        print(json.dumps(doc, indent=1, allow_nan=False))
        return 0
    print(f"tilewise advise {a.kind} on {_status(a.gpu)}")
    if note:
        print(note)
    print(f"{'#':>2} {'config':<34} {'pred us':>9} {'TFLOP/s':>8} {'TB/s':>6}  binding")
    for i, x in enumerate(out, 1):
        print(
            f"{i:>2} {x.tag:<34} {x.prediction.ms * 1e3:>9.1f} {x.tflops:>8.1f} {x.tbps:>6.2f}  {x.prediction.binding}"
        )
    print()
    for i, x in enumerate(out, 1):
        print(f"{i:>2} {x.reason}")
    if glu:
        flops = 2.0 * prob["m"] * prob["n"] * prob["k"]
        print("\nthe Gluon kernel (kernels/gemm_gluon.py, Hopper; matmul runs its best where it is predicted faster "
              "than the Triton top-1, stream-K only by a margin; matmul_plan says which ran):")  # fmt: skip
        for i, (tag, _c, pr) in enumerate(glu, 1):
            print(f"{i:>2} {tag:<34} {pr.ms * 1e3:>9.1f} {flops / pr.ms / 1e9:>8.1f} {'':>6}  {pr.binding}")
    return 0


def _gluon_ranked(prob: dict[str, Any], gpu: str) -> list[tuple[str, dict[str, Any], Any]]:
    """The Gluon GEMM's configs that fit the problem on `gpu`, ranked by `tilewise.model.predict.gemm_gluon`
    ([] off Hopper or for fp32: `advise.space.gemm_gluon_space` is then empty)."""
    cs = space.gemm_gluon_space(prob["m"], prob["n"], prob["k"], prob["dtype"], gpu, prob["layout"])
    ranked = [(space.gemm_gluon_tag(c), c, gemm_gluon(prob, c, gpu)) for c in cs]
    return sorted(ranked, key=lambda r: (r[2].ms, r[0]))


def _why(a: argparse.Namespace, prob: dict[str, Any]) -> int:
    """Where one config of the GEMM grid stands for this problem: its rank and predicted time, or the fit rule
    (`advise.space.gemm_fits`) that leaves it out: shared memory, registers, spills, TMA rows, split-K steps."""
    grid = {space.gemm_tag(c): c for c in space.gemm_grid()}
    if a.why in _gluon_tags():
        return _why_gluon(a, prob)
    if a.why not in grid:
        close = sorted(t for t in grid if t.split("_")[0] == str(a.why).split("_")[0]) or sorted(grid)[:3]
        raise InputError(f"--why takes a config tag of the GEMM grid (such as {', '.join(close[:3])}) or of the "
                         f"Gluon kernel's space (such as {sorted(_gluon_tags())[0]}), got {a.why!r}")  # fmt: skip
    g = _gpus.get(a.gpu)
    reason = space.gemm_fits(grid[a.why], prob["m"], prob["n"], prob["k"], prob["dtype"], g, prob["layout"])
    ranked = advise("gemm", prob, gpu=a.gpu, top_k=len(grid))
    rank = next((i for i, x in enumerate(ranked, 1) if x.tag == a.why), None)
    out: dict[str, Any] = {"kernel": "gemm", "problem": prob, "gpu": g.key, "config": a.why, "offered": not reason,
                           "reason": reason, "rank": rank, "of": len(ranked)}  # fmt: skip
    if rank is not None:
        x = ranked[rank - 1]
        out.update(predicted_ms=x.prediction.ms, binding=x.prediction.binding, top1=ranked[0].tag,
                   top1_ms=ranked[0].prediction.ms)  # fmt: skip
    return _say_why(a, out, "", "")


def _gluon_tags() -> dict[str, dict[str, Any]]:
    """{tag: config} of every Gluon GEMM config `advise.space.gemm_gluon_space` can offer (an 8192^3 bf16 problem on
    the H200 fits them all)."""
    return {space.gemm_gluon_tag(c): c for c in space.gemm_gluon_space(8192, 8192, 8192, "bf16", "h200")}


def _why_gluon(a: argparse.Namespace, prob: dict[str, Any]) -> int:
    """--why for a Gluon config: its rank in the Gluon space by the model, or the fit rule that leaves it out."""
    c = _gluon_tags()[a.why]
    g = _gpus.get(a.gpu)
    reason = space.gemm_gluon_fits(c, prob["m"], prob["n"], prob["k"], prob["dtype"], g, prob["layout"])
    ranked = _gluon_ranked(prob, a.gpu)
    rank = next((i for i, r in enumerate(ranked, 1) if r[0] == a.why), None)
    out: dict[str, Any] = {"kernel": "gemm_gluon", "problem": prob, "gpu": g.key, "config": a.why,
                           "offered": not reason, "reason": reason, "rank": rank, "of": len(ranked)}  # fmt: skip
    if rank is not None:
        pr = ranked[rank - 1][2]
        out.update(predicted_ms=pr.ms, binding=pr.binding, top1=ranked[0][0], top1_ms=ranked[0][2].ms)
    return _say_why(a, out, " (the Gluon kernel)", " Gluon configs")


def _say_why(a: argparse.Namespace, out: dict[str, Any], who: str, among: str) -> int:
    """--why's answer: the JSON object, or one line: the fit rule's reason, or the rank and predicted time."""
    if a.json:
        print(json.dumps(out, indent=1, allow_nan=False))
        return 0
    p = out["problem"]
    shape = f"{p['m']}x{p['n']}x{p['k']} {p['dtype']} {p['layout']}"
    if out["reason"]:
        print(f"{a.why}{who} is not offered for {shape} on {out['gpu']}: {out['reason']}")
    else:
        top = "the Gluon top-1" if among else "the top-1"
        print(f"{a.why}{who} on {shape} ({out['gpu']}): rank {out['rank']} of {out['of']}{among}, predicted "
              f"{out['predicted_ms'] * 1e3:.1f} us ({out['binding']} binds); {top}, {out['top1']}, "
              f"{out['top1_ms'] * 1e3:.1f} us")  # fmt: skip
    return 0


def _backward(a: argparse.Namespace, prob: dict[str, Any]) -> int:
    out = advise_backward(prob, a.gpu, a.top)
    if a.json:
        print(json.dumps({"kernel": "attention_backward", "problem": prob, "gpu": _gpus.get(a.gpu).key,
                          "shipped": shipped(prob, a.gpu), "advice": out}, indent=1, allow_nan=False))  # fmt: skip
    else:
        print(render(prob, out, a.gpu))
    return 0


def _validate(a: argparse.Namespace) -> int:
    v = validate.verdict(a.sweep, a.gpu)
    if a.json:
        for f in v["families"].values():
            if not a.per_problem:
                f.pop("per_problem", None)
        print(json.dumps(v, indent=1, default=float))
        return 0
    s = v["sweep"]
    print(f"sweep: {s.get('gpu')}, {s.get('date')}, torch {s.get('torch')}, triton {s.get('triton')}")
    print("held-out problems only (benchmarks/sweeps/problems.split_of == 'val')")
    hdr = f"{'family':<10} {'n':>4} {'top1<=5%':>9} {'err med':>8} {'err p90':>8}  {'vs':<28}"
    print(hdr)
    for fam, f in v["families"].items():
        vs = []
        for who in ("nmh", "hand"):
            if who in f:
                w = f[who]
                vs.append(f"{who} {w['top1_within_5pct']:.0%}/{w['error_median']:.0%}/{w['error_p90']:.0%}")
        print(
            f"{fam:<10} {f['problems']:>4} {f['top1_within_5pct']:>9.0%} {f['error_median']:>8.1%} "
            f"{f['error_p90']:>8.1%}  {'; '.join(vs)}"
        )
        c = f["calibration_split"]
        print(f"{'':<10} calibration split (in-sample): {c['problems']} problems, top1 {c['top1_within_5pct']:.0%}, "
              f"err med {c['error_median']:.1%}, p90 {c['error_p90']:.1%}")  # fmt: skip
        print(f"{'':<10} autotune would spend {f['autotune_device_s']:.0f} s of device time "
              f"({f['autotune_configs']} configs); the advisor 0 s")  # fmt: skip
        if "vs_cublas" in f:
            c = f["vs_cublas"]
            print(
                f"{'':<10} vs cuBLAS: advisor median {c['advisor_median']:.2f}x, min {c['advisor_min']:.2f}x, "
                f"{c['advisor_below_0.8']} below 0.8x; kernel's best median {c['kernel_best_median']:.2f}x, "
                f"min {c['kernel_best_min']:.2f}x, {c['kernel_best_below_0.8']} below 0.8x"
            )
    if "fresh" in v:
        fr = v["fresh"]
        print(f"fresh held-out set (random problems, seed {fr['seed']}, swept {fr['date']}):")
        for fam, f in fr["families"].items():
            if f["problems"]:
                print(f"{fam:<10} {f['problems']:>4} {f['top1_within_5pct']:>9.0%} {f['error_median']:>8.1%} "
                      f"{f['error_p90']:>8.1%}  worst top-1 {f['top1_ratio_worst']:.2f}x"
                      + (f"; nmh top-1 {f['nmh']['top1_within_5pct']:.0%}" if "nmh" in f else ""))  # fmt: skip
    if "gemm_defaults_vs_cublas_all" in v:
        c = v["gemm_defaults_vs_cublas_all"]
        print(f"gemm defaults (advisor top-1) vs cuBLAS over all {c['problems']} problems: median "
              f"{c['advisor_median']:.2f}x, min {c['advisor_min']:.2f}x, {c['advisor_below_0.8']} below 0.8x; "
              f"kernel's best median {c['kernel_best_median']:.2f}x, {c['kernel_best_below_0.8']} below 0.8x")  # fmt: skip
    return 0


def _calibrate(a: argparse.Namespace) -> int:
    t = C.load_tunable(a.target)
    if a.timings:
        rows = C.read_rows(a.timings)
    else:
        partial = a.partial or (a.out + ".partial.jsonl")
        rows = C.measure(t, budget_s=float(a.budget), partial=partial, progress=not a.json)
    cal = C.fit(t.desc, rows, named_of=t.named_of)
    C.write(cal, a.out)
    h = cal["held_out_error"]
    if a.json:
        print(json.dumps(cal, indent=1))
        return 0
    print(f"{t.desc.name}: {cal['timings']['fit']} timings fitted, rates {cal['rates']}, "
          f"{len(cal['configs'])} config(s) with their own")  # fmt: skip
    print(f"held-out error over {cal['timings']['held_out']} timings of {cal['timings']['held_out_shapes']} shape(s): "
          f"median {h['median']:.1%}, p90 {h['p90']:.1%} (built-in rates: median {h['builtin_median']:.1%})")  # fmt: skip
    if cal["kept"] == "built-in":
        print("the fit does not predict the held-out shapes better than the built-in rates: the pruner keeps those")
    print(f"-> {a.out} (prune_configs_by(desc, calibration={a.out!r}))")
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser(
        "calibrate",
        help="fit the time model's rates for your own Triton kernel from a few GPU timings",
        description="Time a designed subset of a kernel's configs x shapes (budgeted, resumable), fit the model's "
        "per-kernel rates, print the error on held-out shapes and write a calibration file for "
        "tilewise.advise.autotune.prune_configs_by.",
        epilog="examples:\n  tilewise calibrate my_kernels.py:TUNABLE --budget 60 --out my_kernel.h200.json\n"
        "  tilewise calibrate my_kernels.py:TUNABLE --timings rows.jsonl --out my_kernel.h200.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("target", help="MODULE:NAME or FILE.py:NAME of a tilewise.advise.calibrate.Tunable")
    c.add_argument("--out", required=True, help="the calibration file to write")
    c.add_argument("--budget", default="60", help="seconds of timing (default 60)")
    c.add_argument("--partial", default=None, help="the resumable timings file (default OUT.partial.jsonl)")
    c.add_argument("--timings", default=None, help="fit these timings (a partial file) instead of measuring")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_calibrate)
    p = sub.add_parser(
        "advise",
        help="the time model's top-k configs for gemm|attention|decode|grouped (or --validate)",
        description="Rank every configuration of a kernel's space by the time model (tilewise.model.predict) "
        "and print the top k with predicted time, TFLOP/s, TB/s, the binding term and a reason.",
        epilog="examples:\n  tilewise advise gemm --m 1000 --n 1000 --k 1000\n"
        "  tilewise advise gemm --m 1024 --n 4096 --k 4096 --layout nt --json\n"
        "  tilewise advise gemm --m 1023 --n 1025 --k 1027 --why 128x128x64_g8_s1_w4_st4   # why not offered\n"
        "  tilewise advise gemm --m 2000 --n 3000 --k 4000 --why gco192x128x64_g8_st5_e2   # a Gluon config\n"
        "  tilewise advise decode --batch 8 --seq-len 32768 --gpu h100\n  tilewise advise --validate",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("kind", nargs="?", choices=list(ARGS), help="the kernel")
    for kind, args in ARGS.items():
        for name, default in args:
            flag = "--" + name.replace("_", "-")
            if any(flag in a.option_strings for a in p._actions):
                continue
            p.add_argument(flag, dest=name, default=None, help=f"{kind}: default {default}" if default else None)
    p.add_argument("--rows", dest="rows_per_expert", default=None, help="grouped: rows per expert")
    p.add_argument("--dtype", default=None, help="bf16 | fp16 (gemm: fp32 too, run as tf32); default bf16")
    p.add_argument("--layout", default=None, help="gemm: nn (B [K, N]) or nt (a @ w.T, w [N, K]); default nn")
    p.add_argument("--causal", action="store_true", help="attention: causal mask")
    p.add_argument("--backward", action="store_true", help="attention: the backward's tiles (dK/dV, dQ)")
    p.add_argument(
        "--why",
        default=None,
        metavar="TAG",
        help="gemm: one config's rank (Triton grid or Gluon space), or the fit rule that leaves it out",
    )
    p.add_argument(
        "--gpu",
        default=_gpus.DEFAULT_GPU,
        help=f"a registry GPU (tilewise gpus) or a GPU file (.toml/.json) (default {_gpus.DEFAULT_GPU})",
    )
    p.add_argument("--top", type=cli_int, default=None, help="how many configs (default 5)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--validate", action="store_true", help="the verdict on the committed sweep fixtures")
    p.add_argument("--sweep", default=None, help="--validate: the fixture folder (default tests/data/sweeps/h200)")
    p.add_argument("--per-problem", action="store_true", help="--validate --json: every problem's row too")
    p.set_defaults(func=_wrap)


def _wrap(a: argparse.Namespace) -> int:
    _refuse_unused(a)
    if a.top is None:
        a.top = 5
    if a.kind is not None:
        for name, default in ARGS[a.kind]:
            if getattr(a, name) is None and default is not None:
                setattr(a, name, default)
    return _run(a)
