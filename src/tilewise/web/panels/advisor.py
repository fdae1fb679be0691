"""The advisor: a problem in, ranked configs out (`tilewise.advise.advise`, the same function as `tilewise advise`).

Where the committed sweeps (tests/data/sweeps/, packaged by `measured_build`) timed the same problem
on the H200, the measured best config and time stand beside the advice. A GEMM on a Hopper GPU also gets the
Gluon kernel's configs (`advise.space.gemm_gluon_space`) ranked by `model.predict.gemm_gluon`, each beside its
time in the Gluon sweep; `tilewise.kernels.matmul` runs whichever kernel's top-1 the model predicts faster.
"""

from __future__ import annotations

from typing import Any

from tilewise.advise import advise
from tilewise.advise.space import gemm_gluon_space, gemm_gluon_tag
from tilewise.model.predict import gemm_gluon
from tilewise.web import measured
from tilewise.web.params import Params
from tilewise.web.registry import gpu_summary, panel

KERNELS = ("gemm", "attention", "decode", "grouped")
MAX_DIM = 1 << 20  # the explorer's bound; `advise` has its own, larger ones


def problem(kernel: str, p: Params) -> dict[str, Any]:
    """The problem dict `advise` takes (`tilewise.advise.problems.FIELDS`); `advise` checks the ranges."""
    dtype = p.choice("dtype", "bf16", ("bf16", "fp16"))
    if kernel == "gemm":
        return {
            "m": p.int("m", 64, 1, MAX_DIM),
            "n": p.int("n", 24576, 1, MAX_DIM),
            "k": p.int("k", 8192, 1, MAX_DIM),
            "dtype": dtype,
            "layout": p.choice("layout", "nn", ("nn", "nt")),
        }
    head_dim = int(p.choice("head_dim", "128", ("16", "32", "64", "128", "256")))
    if kernel == "attention":
        seq = p.int("seq", 4096, 1, 1 << 22)
        return {
            "batch": p.int("batch", 4, 1, 4096),
            "heads": p.int("heads", 32, 1, 256),
            "kv_heads": p.int("kv_heads", 32, 1, 256),
            "seq_q": seq,
            "seq_k": seq,
            "head_dim": head_dim,
            "causal": p.choice("causal", "1", ("0", "1")) == "1",
            "dtype": dtype,
        }
    if kernel == "decode":
        return {
            "batch": p.int("batch", 8, 1, 4096),
            "heads": p.int("heads", 32, 1, 256),
            "kv_heads": p.int("kv_heads", 8, 1, 256),
            "seq_len": p.int("seq", 32768, 1, 1 << 24),
            "head_dim": head_dim,
            "dtype": dtype,
        }
    return {
        "experts": p.int("experts", 128, 1, 4096),
        "rows_per_expert": p.int("rows", 32, 1, 1 << 16),
        "n": p.int("n", 1536, 1, MAX_DIM),
        "k": p.int("k", 2048, 1, MAX_DIM),
        "dtype": dtype,
    }


@panel(
    "advisor",
    "The advisor: a problem in, ranked configs out",
    (
        "gpu",
        "kernel",
        "top_k",
        "m",
        "n",
        "k",
        "dtype",
        "layout",
        "batch",
        "heads",
        "kv_heads",
        "seq",
        "head_dim",
        "causal",
        "experts",
        "rows",
    ),
)
def advisor_panel(p: Params) -> dict[str, Any]:
    g = p.gpu()
    kernel = p.choice("kernel", "gemm", KERNELS)
    top_k = p.int("top_k", 5, 1, 20)
    prob = problem(kernel, p)
    ranked = advise(kernel, prob, gpu=g.key, top_k=top_k)
    # The sweep's timings of this exact problem on the H200, if the committed sweeps have it: the measured
    # best, and beside each advised config its own measured time and rank among every config timed.
    sweep = measured.sweep_best(kernel, prob, g.key)
    advice = [{**a.to_dict(), **_measured(sweep, a.tag)} for a in ranked]
    return {
        "gpu": gpu_summary(g),
        "kernel": kernel,
        "problem": prob,
        "advice": advice,
        "measured": {k: v for k, v in sweep.items() if k != "times"} if sweep else None,
        **(_gluon(prob, g.key, top_k) if kernel == "gemm" else {"gluon": None, "gluon_measured": None}),
    }


def _measured(sweep: dict[str, Any] | None, tag: str) -> dict[str, Any]:
    """A config's time in the sweep and its rank there: 1 + the configs measured strictly faster (ties share it)."""
    ms = sweep["times"].get(tag) if sweep else None
    rank = 1 + sum(t < ms for t in sweep["times"].values()) if sweep and ms is not None else None
    return {"measured_ms": ms, "measured_rank": rank}


def _gluon(prob: dict[str, Any], gpu_key: str, top_k: int) -> dict[str, Any]:
    """The Gluon GEMM's configs that fit (none off Hopper or for rows TMA cannot read), ranked by the model, each
    with its time and rank in the committed Gluon sweep where that timed the problem."""
    space = gemm_gluon_space(prob["m"], prob["n"], prob["k"], prob["dtype"], gpu_key, prob["layout"])
    if not space:
        return {"gluon": [], "gluon_measured": None}
    ranked = sorted(((gemm_gluon(prob, c, gpu_key), gemm_gluon_tag(c), c) for c in space), key=lambda x: x[0].ms)
    sweep = measured.sweep_best("gemm", prob, gpu_key, family="gemm_gluon")
    rows = [{"tag": tag, "config": c, "predicted_ms": pred.ms, "binding": pred.binding, **_measured(sweep, tag)}
            for pred, tag, c in ranked[:top_k]]  # fmt: skip
    return {"gluon": rows, "gluon_measured": {k: v for k, v in sweep.items() if k != "times"} if sweep else None}
