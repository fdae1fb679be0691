"""The attention backward's model: work, bytes, the tile budget, the time model's fit to the committed rows,
`tilewise advise attention --backward` and `tilewise explain attention --backward`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tilewise.bench.shapes import attention_name
from tilewise.cli import main
from tilewise.errors import InputError
from tilewise.model import attention_backward as m
from tilewise.model import traffic

ROWS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "h200" / "attention_backward.json"
TUNE_ROWS = ROWS.with_name("attention_backward_tune.json")
P = {"batch": 1, "heads": 32, "kv_heads": 8, "seq_q": 4096, "seq_k": 4096, "head_dim": 128, "causal": False}
C = {"block_m": 64, "block_n": 128, "num_warps": 8, "num_stages": 2, "dq": "atomic"}


@pytest.mark.parametrize("causal", [False, True])
def test_work_is_five_or_seven_gemms_per_pair(causal):
    fwd = traffic.attention_flops(2, 4, 300, 500, 64, causal)  # two GEMMs per pair
    assert m.useful_flops(2, 4, 300, 500, 64, causal) * 2 == fwd * 5
    assert m.flops(2, 4, 300, 500, 64, causal, "separate") * 2 == fwd * 7


def test_bytes_count_every_tensor_once():
    B, H, Hk, sq, sk, d = 2, 8, 2, 100, 300, 64
    q, kv, rows = B * H * sq * d, B * Hk * sk * d, B * H * sq
    # in: Q, K, V, O, dO (2 B), lse, D (fp32); out: dQ, dK, dV; the preprocess writes D
    want = (3 * q + 2 * kv) * 2 + 2 * rows * 4 + (q + 2 * kv) * 2 + rows * 4
    assert m.hbm_bytes(B, H, Hk, sq, sk, d, "bf16", "separate") == want
    assert m.hbm_bytes(B, H, Hk, sq, sk, d, "bf16", "atomic") == want + 3 * q * 4


def test_tile_budget_of_the_d128_rule():
    b = m.tile_budget(128, 64, 128, 8, 2)
    assert b["registers"]["dk_dv"] == 128 and b["registers"]["s_dp"] == 64 and b["registers"]["total"] == 240
    assert b["smem"]["total_bytes"] == 128 * 1024 and b["smem"]["fits"]
    assert not m.tile_budget(256, 64, 128, 8, 2)["registers"]["fits"]  # dK + dV alone: 256 registers


def test_prediction_grows_with_the_problem_and_causal_halves_it():
    a = m.predict(P, C)
    assert m.predict({**P, "seq_q": 8192, "seq_k": 8192}, C).ms > 3 * a.ms
    assert m.predict({**P, "causal": True}, C).ms < 0.7 * a.ms
    assert a.binding in a.terms
    with pytest.raises(InputError, match="dq must be one of"):
        m.predict(P, {**C, "dq": "magic"})


def test_constants_are_the_fit_to_the_committed_rows():
    rows = json.loads(TUNE_ROWS.read_text())["rows"]
    fit = m.fit(rows)
    assert fit["rows"] == 51  # the runs whose dK/dV tile fits the register budget, each counted once
    assert fit["scale"] == pytest.approx(m.BACKWARD_MMA_SCALE, abs=0.005)
    assert fit["atomic_tbps"] == pytest.approx(m.ATOMIC_TBPS, abs=0.005)
    assert fit["error_median"] == pytest.approx(0.120, abs=0.005)  # the errors the module's comment states
    assert fit["error_mean"] == pytest.approx(0.238, abs=0.005)


def test_shipped_tiles_are_the_tune_rows_best():
    # the table the kernel launches holds, per head dim, the fastest dK/dV tile of the separate mode on the tune
    # problems (mean of each problem's time over its best) and the fastest dQ-kernel tile, as its comment says
    rows = [r for r in json.loads(TUNE_ROWS.read_text())["rows"] if r.get("section") == "tiles" and "graph_ms" in r]
    for d, (kv, dq, atomic) in m.SHIPPED.items():
        if d < 64:
            continue
        for kind, key, want in (
            ("separate-dkdv", "dkdv", kv),
            ("separate-dq", "dq_tile", dq),
            ("atomic", "dkdv", atomic),
        ):
            fam = [r for r in rows if r["head_dim"] == d and r["kind"] == kind]
            best = {s: min(r["graph_ms"] for r in fam if r["shape"] == s) for s in {r["shape"] for r in fam}}
            score = {}
            for r in fam:
                score.setdefault(tuple(r[key]), []).append(r["graph_ms"] / best[r["shape"]])
            full = {t: sum(v) / len(v) for t, v in score.items() if len(v) == len(best)}
            assert min(full, key=full.__getitem__) == want, (d, kind, full)
    assert m.DQ_MODE == "separate" and m.shipped_config(128)["dq"] == "separate"
    assert m.shipped_config(128, dq="atomic")["block_n"] == m.SHIPPED[128][2][1]


def test_atomic_mode_is_bound_by_its_adds_on_long_sequences():
    p = {**P, "kv_heads": 32, "seq_q": 8192, "seq_k": 8192, "causal": True}
    atomic, separate = m.predict(p, C), m.predict(p, {**C, "dq": "separate"})
    assert atomic.binding == "atomics" and separate.binding == "tensor_core"
    assert separate.ms < atomic.ms  # as measured: 4.16 ms against 4.94 (the probe rows)


def test_shape_names_read_back():
    for args in ((4, 32, 8, 4096, 128, True), (1, 16, 16, 512, 64, False)):
        p = m.problem_of(attention_name(*args))
        assert (p["batch"], p["heads"], p["kv_heads"], p["seq_q"], p["head_dim"], p["causal"]) == args
    with pytest.raises(InputError):
        m.problem_of("B4 S1")


def test_space_fits_and_rank_sorts():
    for d in (64, 128, 256):
        for c in m.space(d):
            b = m.tile_budget(d, c["block_m"], c["block_n"], c["num_warps"], c["num_stages"])
            assert b["registers"]["fits"] and b["smem"]["fits"]
    ranked = m.rank({**P, "dtype": "bf16"}, top_k=50)
    ms = [p.ms for _, p in ranked]
    assert ms == sorted(ms)


def test_advise_attention_backward(capsys):
    assert main(["advise", "attention", "--backward", "--causal", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kernel"] == "attention_backward" and out["advice"][0]["predicted_ms"] > 0
    # the first row names what the kernel launches: the model's table, which the kernel reads too
    ship = m.shipped_config(128)
    assert out["shipped"]["config"] == ship and out["shipped"]["predicted_ms"] == m.predict(out["problem"], ship).ms
    assert main(["advise", "attention", "--backward"]) == 0
    assert "5 GEMMs per (query, key) pair" in capsys.readouterr().out
    assert main(["advise", "gemm", "--backward"]) == 2
    assert "got --backward, which it does not use" in capsys.readouterr().err


def test_explain_attention_backward(capsys):
    assert main(["explain", "attention", "--backward", "--causal", "--kv-heads", "4", "--gpu", "h200", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["kind"] == "attention_backward"
    assert r["work"]["ratio_to_forward"] == pytest.approx(3.5)  # the shipped mode: dQ by the second kernel
    ship = m.shipped_config(128)
    assert (r["tile"]["block_m"], r["tile"]["block_n"]) == (ship["block_m"], ship["block_n"])
    assert r["tile"]["group"] == 4 and r["registers"]["total"] == 240 and r["smem"]["fits"]
    assert main(["explain", "attention", "--backward", "--dq", "atomic", "--gpu", "h200", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["work"]["ratio_to_forward"] == pytest.approx(2.5) and r["bytes"]["atomic_bytes"] > 0
    assert r["memory"]["naive_score_bytes"] > 10 * r["memory"]["bytes"]
    assert main(["explain", "attention", "--backward", "--deterministic", "--gpu", "h200", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["work"]["gemms_per_pair"] == 7 and r["bytes"]["atomic_bytes"] == 0
    assert main(["explain", "attention", "--backward", "--gpu", "h200"]) == 0
    assert "K and V stay, Q and dO stream" in capsys.readouterr().out


def test_explain_options_that_do_not_apply_are_refused(capsys):
    assert main(["explain", "attention", "--warps", "4"]) == 2
    assert "--warps applies only with --backward" in capsys.readouterr().err
    assert main(["explain", "attention", "--dq", "atomic"]) == 2
    assert "--dq applies only with --backward" in capsys.readouterr().err
    assert main(["explain", "attention", "--backward", "--hit-rate", "0.5"]) == 2
    assert "does not take it" in capsys.readouterr().err
