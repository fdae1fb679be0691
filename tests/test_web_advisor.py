"""The advisor panel: the same ranking as `tilewise.advise.advise`, and where the committed sweeps
timed the problem on the H200, the measured best and each advised config's own time, named by line."""

import json
from pathlib import Path

import pytest

from tilewise.advise import advise
from tilewise.advise.problems import normalize
from tilewise.errors import InputError
from tilewise.web import api

SWEEPS = Path(__file__).resolve().parent / "data" / "sweeps" / "h200"


def sweep_lines(family: str, problem: dict) -> list[tuple[int, dict]]:
    """Every timed line of the committed sweep for this problem (read here, independently of the build)."""
    want = normalize(family, problem)
    out = []
    with open(SWEEPS / f"{family}.jsonl") as f:
        for i, line in enumerate(f, 1):
            r = json.loads(line)
            if r.get("ms") is not None and normalize(family, r["problem"]) == want:
                out.append((i, r))
    return out


CASES = [
    ("gemm", {}, {"m": 64, "n": 24576, "k": 8192, "dtype": "bf16", "layout": "nn"}),
    (
        "gemm",
        {"m": "1", "n": "6144", "k": "4096", "layout": "nt"},
        {"m": 1, "n": 6144, "k": 4096, "dtype": "bf16", "layout": "nt"},
    ),
    (
        "decode",
        {"batch": "1", "seq": "4096"},
        {"batch": 1, "heads": 32, "kv_heads": 8, "seq_len": 4096, "head_dim": 128},
    ),
    ("grouped", {"rows": "8"}, {"experts": 128, "rows_per_expert": 8, "n": 1536, "k": 2048}),
    (
        "attention",
        {"batch": "1", "seq": "512"},
        {"batch": 1, "heads": 32, "kv_heads": 32, "seq_q": 512, "seq_k": 512, "head_dim": 128, "causal": True},
    ),
]


@pytest.mark.parametrize(("kernel", "query", "problem"), CASES)
def test_advice_is_the_advisors_and_measured_is_the_sweep(kernel, query, problem):
    d = api.call("advisor", {"gpu": "h200", "kernel": kernel, **query})
    assert d["problem"] == normalize(kernel, problem)
    want = [a.to_dict() for a in advise(kernel, problem, gpu="h200", top_k=5)]
    assert [{k: a[k] for k in w} for a, w in zip(d["advice"], want)] == want and len(d["advice"]) == 5
    lines = sweep_lines(kernel, problem)
    assert lines, f"the committed sweep must time {problem}"
    space = [(i, r) for i, r in lines if r.get("source", "space") == "space"]
    best_line, best = min(space, key=lambda x: x[1]["ms"])
    m = d["measured"]
    assert (m["tag"], m["ms"], m["row"], m["configs"]) == (best["tag"], best["ms"], best_line, len(space))
    assert (
        m["file"] == f"tests/data/sweeps/h200/{kernel}.jsonl" and m["gpu"] == "NVIDIA H200" and m["triton"] == "3.6.0"
    )
    times = {}
    for _, r in space:
        times[r["tag"]] = min(r["ms"], times.get(r["tag"], r["ms"]))
    for a in d["advice"]:
        if a["tag"] in times:
            assert a["measured_ms"] == times[a["tag"]] and a["measured_rank"] == 1 + sum(
                t < times[a["tag"]] for t in times.values()
            )
        else:
            assert a["measured_ms"] is None and a["measured_rank"] is None
    assert any(a["measured_ms"] is not None for a in d["advice"])  # the advice's configs are the space's


def test_gemm_on_hopper_lists_the_gluon_configs_beside_the_gluon_sweep():
    """The Gluon kernel's configs in the model's order (`predict.gemm_gluon` over `gemm_gluon_space`), each beside its
    own line of the committed Gluon sweep (read here from the file), and the sweep's cuBLAS and dispatch times."""
    from tilewise.advise.space import gemm_gluon_space, gemm_gluon_tag
    from tilewise.model.predict import gemm_gluon

    problem = {"m": 384, "n": 6144, "k": 4096, "dtype": "bf16", "layout": "nt"}
    d = api.call("advisor", {"gpu": "h200", "kernel": "gemm", "m": "384", "n": "6144", "k": "4096", "layout": "nt"})
    want = sorted((gemm_gluon(problem, c).ms, gemm_gluon_tag(c)) for c in gemm_gluon_space(**problem))[:5]
    assert [(g["predicted_ms"], g["tag"]) for g in d["gluon"]] == want
    times, others = {}, {}
    with open(SWEEPS / "gemm_gluon.jsonl") as f:
        for r in map(json.loads, f):
            if r["key"] == "384x6144x4096_bf16_nt" and r.get("ms") is not None:
                if r["source"] == "space":
                    times[r["tag"]] = r["ms"]
                else:
                    others[r["source"]] = r["ms"]
    for g in d["gluon"]:
        assert g["measured_ms"] == times[g["tag"]]
        assert g["measured_rank"] == 1 + sum(t < times[g["tag"]] for t in times.values())
    m = d["gluon_measured"]
    assert m["configs"] == len(times) and m["ms"] == min(times.values()) and m["file"].endswith("gemm_gluon.jsonl")
    assert {k: v["ms"] for k, v in m["others"].items()} == others
    # off Hopper, and for rows TMA cannot read, there is no Gluon config; other kernels carry none
    assert api.call("advisor", {"gpu": "a100", "kernel": "gemm"})["gluon"] == []
    assert api.call("advisor", {"gpu": "h200", "kernel": "gemm", "n": "1001"})["gluon"] == []
    assert api.call("advisor", {"gpu": "h200", "kernel": "decode"})["gluon"] is None


def test_other_gpus_and_unswept_problems_have_no_measurement():
    assert api.call("advisor", {"gpu": "h100-sxm"})["measured"] is None
    d = api.call("advisor", {"gpu": "h200", "m": "777", "n": "333", "k": "999"})
    assert d["measured"] is None and all(a["measured_ms"] is None for a in d["advice"])


def test_bad_problems_are_refused_with_the_advisors_message():
    with pytest.raises(InputError, match="kernel must be one of"):
        api.call("advisor", {"kernel": "conv"})
    with pytest.raises(InputError, match="heads must be a multiple of kv_heads"):
        api.call("advisor", {"kernel": "attention", "heads": "32", "kv_heads": "5"})
    with pytest.raises(InputError, match="m must be an integer"):
        api.call("advisor", {"m": "0"})
    with pytest.raises(InputError, match="top_k must be an integer"):
        api.call("advisor", {"top_k": "50"})
