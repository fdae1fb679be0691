"""tilewise.advise: the API, the space it proposes from, the CLI and its bad-input answers."""

from __future__ import annotations

import json
import os
import random
import time

import pytest

from tilewise import cli
from tilewise.advise import advise, candidates, default_config, fixtures, space
from tilewise.advise.problems import normalize
from tilewise.errors import InputError
from tilewise.model.predict import predict

HERE = os.path.dirname(os.path.abspath(__file__))


def test_advise_ranks_the_space_by_the_model():
    p = {"m": 1024, "n": 4096, "k": 4096, "layout": "nt"}
    out = advise("gemm", p, "h200", top_k=5)
    assert len(out) == 5
    ms = [a.prediction.ms for a in out]
    assert ms == sorted(ms)
    every = [
        predict("gemm", normalize("gemm", p), c, "h200").ms for c in candidates("gemm", normalize("gemm", p), "h200")
    ]
    assert ms[0] == pytest.approx(min(every))
    d = out[0].to_dict()
    assert {"config", "predicted_ms", "tflops", "tbps", "binding", "reason"} <= set(d)
    assert out[0].reason.startswith(out[0].tag) and out[0].prediction.binding in out[0].reason
    assert out[0].tflops == pytest.approx(2 * 1024 * 4096 * 4096 / (ms[0] * 1e-3) / 1e12)
    assert default_config("gemm", p, "h200") == out[0].config


@pytest.mark.parametrize("kernel", ["gemm", "attention", "decode", "grouped"])
def test_never_proposes_a_config_that_does_not_fit(kernel):
    rng = random.Random(7)
    for _ in range(40):
        if kernel == "gemm":
            p = {"m": rng.choice([1, 7, 64, 300, 4096]), "n": rng.choice([64, 1000, 24576]),
                 "k": rng.choice([64, 2049, 8192]), "dtype": rng.choice(["bf16", "fp16", "fp32"]),
                 "layout": rng.choice(["nn", "nt"])}  # fmt: skip
        elif kernel == "attention":
            p = {"batch": 2, "heads": 16, "seq_q": rng.choice([100, 4096]), "head_dim": rng.choice([64, 128, 256]),
                 "causal": rng.random() < 0.5}  # fmt: skip
        elif kernel == "decode":
            p = {"batch": rng.choice([1, 64]), "heads": 32, "kv_heads": 8, "seq_len": rng.choice([100, 65536]),
                 "head_dim": rng.choice([64, 128, 256])}  # fmt: skip
        else:
            p = {"experts": rng.choice([8, 128]), "rows_per_expert": rng.choice([1, 64, 2048]), "n": 1536, "k": 2048}
        q = normalize(kernel, p)
        for gpu in ("h200", "a100-sxm", "b200"):
            allowed = {space.TAGS[kernel](c) for c in candidates(kernel, q, gpu)}
            for a in advise(kernel, p, gpu, top_k=5):
                assert a.tag in allowed
                if kernel == "gemm":
                    assert space.gemm_fits(a.config, q["m"], q["n"], q["k"], q["dtype"], gpu, q["layout"]) == ""


def test_shared_memory_rule_equals_the_compiler():
    """The fit rule's shared memory is what triton 3.6 reserved compiling each config for sm_90."""
    data = json.load(open(os.path.join(os.path.dirname(space.__file__), "sm90_gemm_compiled.json")))["configs"]
    by_tag = {space.gemm_tag(c): c for c in space.gemm_grid()}
    checked = 0
    for key, v in data.items():
        dt, tag = key.split(":")
        if "shared" not in v or dt != "bf16":
            continue
        assert space.gemm_smem_bytes(by_tag[tag], 2) == v["shared"], key
        why = space.gemm_fits(by_tag[tag], 8192, 8192, 8192, "bf16", "h200")
        assert ("shared memory" in why) == (v["shared"] > 232448 - 1024), (key, why)
        checked += 1
    assert checked >= 40


def test_c_row_alignment_is_the_pitch_alignment():
    """The spill rule reads the build for C rows of n elements at row_load_bytes(n x e) bytes of alignment."""
    assert [space.row_load_bytes(n * 2) for n in (1025, 1026, 1028, 1032, 7777, 4096)] == [2, 4, 8, 16, 2, 16]
    assert [space.row_load_bytes(n * 4) for n in (1001, 1002, 1004)] == [4, 8, 16]


def test_configs_that_spill_are_left_out():
    """C rows 2 bytes aligned (N odd): 128 x 128 x 64 on 4 warps spills in its sm_90 build and is left out with the
    reason; at N = 1024 the same config fits. The table's builds are what the rule reads."""
    data = json.load(open(os.path.join(os.path.dirname(space.__file__), "sm90_gemm_compiled.json")))["configs"]
    c = next(c for c in space.gemm_grid() if space.gemm_tag(c) == "128x128x64_g8_s1_w4_st4")
    assert data["bf16:128x128x64_g8_s1_w4_st4"]["spill"]["2"]["k_tail"] > space.SPILL_MAX_BYTES
    assert space.gemm_spill_bytes(c, 1025, 1027, "bf16") == data["bf16:128x128x64_g8_s1_w4_st4"]["spill"]["2"]["k_tail"]
    assert "spills" in space.gemm_fits(c, 1023, 1025, 1027, "bf16", "h200")
    assert space.gemm_fits(c, 1024, 1024, 1024, "bf16", "h200") == ""
    for a in advise("gemm", {"m": 1023, "n": 1025, "k": 1027, "dtype": "bf16", "layout": "nn"}, "h200", top_k=20):
        assert (space.gemm_spill_bytes(a.config, 1025, 1027, "bf16") or 0) <= space.SPILL_MAX_BYTES, a.tag
    # a config the table lacks is kept (a user's knobs, another grid)
    odd = dict(c, block_k=32)
    assert space.gemm_spill_bytes(odd, 1025, 1027, "bf16") is None


def test_every_answer_is_prompt():
    """Uncached answers (each problem new to the advisor's cache); per problem the best of three neighbours
    (m, m + 1, m + 2 ...). An answer takes 1-12 ms of CPU (docs/advise.md measures it against the 50 ms
    target); the limit here, 250 ms of this process's CPU time, only catches a blow-up, not a slow day."""

    def best_of_3(kernel, make):
        best = float("inf")
        for j in range(3):
            t = time.process_time()
            advise(kernel, make(j), "h200")
            best = min(best, time.process_time() - t)
        return best

    rng = random.Random(3)
    worst = 0.0
    for i in range(6):
        n, k = rng.randint(1, 30000), rng.randint(1, 30000)
        worst = max(worst, best_of_3("gemm", lambda j, i=i, n=n, k=k: {"m": 1000 + 3 * i + j, "n": n, "k": k}))
    worst = max(worst, best_of_3("attention", lambda j: {"batch": 1 + j, "heads": 8, "seq_q": 2**22, "head_dim": 128,
                                                         "causal": True}))  # fmt: skip
    worst = max(worst, best_of_3("decode", lambda j: {"batch": 3 + j, "heads": 32, "kv_heads": 8, "seq_len": 2**24,
                                                      "head_dim": 128}))  # fmt: skip
    worst = max(worst, best_of_3("grouped", lambda j: {"experts": 4096 - j, "rows_per_expert": 2**20, "n": 4096,
                                                       "k": 4096}))  # fmt: skip
    assert worst < 0.25


def test_the_seeds_examples():
    """The decode GEMM C[64, 24576] = A[64, 8192] x B[8192, 24576]: memory-bound (intensity ~64 < the
    H200's balance of ~206), and the advisor's choice measured within 5% of the sweep's best config."""
    recs = fixtures.load("gemm")
    # batch 64 within 5% of the best of the space; batch 1 within 13% (measured: the advisor's 16x128x128 st4,
    # 107.5 us, against 16x128x256 st4, 96.0 us: ten skinny configs stream B at 3.8-4.2 TB/s within 12% of each
    # other, and the model, within 5-8% on each, ranks them only to that precision)
    for key, within in (("64x24576x8192_bf16_nn", 1.05), ("1x24576x8192_bf16_nn", 1.13)):
        rec = recs[key]
        a = advise("gemm", rec.problem, "h200", top_k=1)[0]
        assert a.prediction.binding == "hbm", key
        assert rec.space[a.tag] <= within * rec.best()[1], (key, a.tag, rec.space[a.tag], rec.best())
    # decode: memory-bound whatever the tile
    d = advise("decode", {"batch": 1, "heads": 32, "kv_heads": 8, "seq_len": 32768, "head_dim": 128}, top_k=1)[0]
    assert d.prediction.binding == "hbm" and d.config["num_splits"] > 1  # one sequence needs splits to fill 132 SMs


BAD = [
    (["advise", "conv"], "invalid choice"),
    (["advise", "gemm", "--gpu", "h900"], "unknown GPU"),
    (["advise", "gemm", "--dtype", "int4"], "dtype must be one of"),
    (["advise", "gemm", "--m", "0"], "m must be an integer"),
    (["advise", "gemm", "--m", "-5"], "m must be an integer"),
    (["advise", "gemm", "--k", "1.5"], "k must be an integer"),
    (["advise", "gemm", "--n", "1e30"], "n must be an integer"),
    (["advise", "gemm", "--n", "1000000000000000000000000000000"], "n must be an integer"),
    (["advise", "attention", "--head-dim", "100"], "--head-dim must be one of"),
    (["advise", "decode", "--heads", "32", "--kv-heads", "5"], "multiple of --kv-heads"),
    (["advise", "gemm", "--layout", "tt"], "layout must be"),
    (["advise", "--validate", "--sweep", "/no/such/dir"], "must exist"),
    (["advise", "gemm", "--why", "128x128x64_g8_s1_w4_st9"], "--why takes a config tag of the GEMM grid"),
    (["advise", "gemm", "--why", "gco192x128x64_g8_st9"], "or of the Gluon kernel's space"),
    (["advise", "attention", "--why", "128x128x64_g8_s1_w4_st4"], "got --why, which it does not use"),
    (["advise", "--validate", "--why", "128x128x64_g8_s1_w4_st4"], "--validate takes only"),
]


@pytest.mark.parametrize("argv, msg", BAD)
def test_cli_bad_input_is_one_line_exit_2(argv, msg, capsys):
    t = time.perf_counter()
    with pytest.raises(SystemExit) if argv[1] == "conv" else _nothing():
        rc = cli.main(argv)
        assert rc == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "Traceback" not in err
    if argv[1] != "conv":
        assert len(err.splitlines()) == 1
    assert time.perf_counter() - t < 20.0  # a hang guard: a refusal takes milliseconds


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_cli_answers_and_json(capsys):
    assert cli.main(["advise", "gemm", "--m", "1000", "--n", "1000", "--k", "1000", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["advice"]) == 5 and "calibrated" in d["status"]
    assert cli.main(["advise", "decode", "--gpu", "h100", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "datasheet-only" in out


def test_cli_why_names_the_rule_or_the_rank(capsys):
    """--why TAG: a config the spill rule leaves out is named with the rule's reason; one that is offered gets its
    rank among the advisor's list and its predicted time, the same as `advise` ranks it."""
    argv = ["advise", "gemm", "--m", "1023", "--n", "1025", "--k", "1027"]
    assert cli.main([*argv, "--why", "128x128x64_g8_s1_w4_st4"]) == 0
    out = capsys.readouterr().out
    assert "not offered" in out and "spills" in out and "2-byte C rows" in out
    assert cli.main([*argv, "--why", "64x128x64_g8_s1_w4_st4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    p = {"m": 1023, "n": 1025, "k": 1027, "dtype": "bf16", "layout": "nn"}
    ranked = [x.tag for x in advise("gemm", p, "h200", top_k=1000)]
    assert d["offered"] and d["reason"] == "" and d["rank"] == ranked.index("64x128x64_g8_s1_w4_st4") + 1
    assert d["of"] == len(ranked) and d["top1"] == ranked[0]
    assert d["predicted_ms"] == predict("gemm", p, space.gemm_config_from_tag("64x128x64_g8_s1_w4_st4")).ms


def test_cli_lists_the_gluon_kernel_and_explains_its_configs(capsys):
    """advise gemm on the H200 ranks the Gluon kernel's configs beside the Triton grid (matmul dispatches across
    both): the list is `predict.gemm_gluon` over `space.gemm_gluon_space`, fastest first; --why takes a Gluon tag
    and gives its rank, or the fit rule that leaves it out (TMA needs 16-byte rows: N = 3001 bf16 has 6002-byte
    rows); off Hopper (an A100) the list is empty."""
    from tilewise.model.predict import gemm_gluon

    argv = ["advise", "gemm", "--m", "2000", "--n", "3000", "--k", "4000"]
    assert cli.main([*argv, "--json", "--top", "3"]) == 0
    d = json.loads(capsys.readouterr().out)
    p = {"m": 2000, "n": 3000, "k": 4000, "dtype": "bf16", "layout": "nn"}
    want = sorted((gemm_gluon(p, c).ms, space.gemm_gluon_tag(c)) for c in space.gemm_gluon_space(**p))[:3]
    assert [(g["predicted_ms"], g["tag"]) for g in d["gluon"]] == want
    assert cli.main(argv) == 0
    assert f" 1 {want[0][1]}" in capsys.readouterr().out
    assert cli.main([*argv, "--why", want[1][1], "--json"]) == 0
    w = json.loads(capsys.readouterr().out)
    assert w["offered"] and w["rank"] == 2 and w["top1"] == want[0][1] and w["predicted_ms"] == want[1][0]
    assert cli.main([*argv[:-4], "--n", "3001", "--k", "4000", "--why", want[0][1]]) == 0
    out = capsys.readouterr().out
    assert "not offered" in out and "16-byte aligned rows" in out
    assert cli.main([*argv, "--gpu", "a100", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gluon"] == []


def test_api_bad_input():
    with pytest.raises(InputError, match="kernel must be one of"):
        advise("conv", {})
    with pytest.raises(InputError, match="needs m"):
        advise("gemm", {"n": 4, "k": 4})
    with pytest.raises(InputError, match="unknown"):
        advise("gemm", {"m": 4, "n": 4, "k": 4, "q": 1})
    with pytest.raises(InputError, match="integer"):
        advise("gemm", {"m": 10**30, "n": 4, "k": 4})
    with pytest.raises(InputError, match="integer"):
        advise("gemm", {"m": 2.5, "n": 4, "k": 4})
    with pytest.raises(InputError, match="top_k"):
        advise("gemm", {"m": 4, "n": 4, "k": 4}, top_k=0)


def test_malformed_fixture(tmp_path):
    (tmp_path / "gemm.jsonl").write_text('{"key": "x"\n')
    with pytest.raises(InputError, match="line 1 must be a JSON row"):
        fixtures.load("gemm", str(tmp_path))
    (tmp_path / "gemm.jsonl").write_text('{"key": "x", "problem": {}, "source": "space", "ms": -1}\n')
    with pytest.raises(InputError, match="positive"):
        fixtures.load("gemm", str(tmp_path))
    with pytest.raises(InputError, match="must exist"):
        fixtures.load("decode", str(tmp_path))


def test_bench_rows_carry_model_ms_beside_the_floor():
    from tilewise.bench import harness
    from tilewise.model import traffic

    cfg = advise("gemm", {"m": 1024, "n": 4096, "k": 4096}, top_k=1)[0].config
    tags = {"gpu": "NVIDIA H200", "cpu": "x", "date": "d", "torch": "t", "triton": "3.6.0", "command": "c"}
    row = harness.make_row(
        kernel="matmul", shape="1024x4096x4096", dtype="bf16", peer="cuBLAS", ours_ms=0.06, peer_ms=0.05,
        flops=traffic.gemm_flops(1024, 4096, 4096), nbytes=traffic.gemm_bytes(1024, 4096, 4096, "bf16"), tags=tags,
        gpu_key="h200", model=("gemm", {"m": 1024, "n": 4096, "k": 4096, "dtype": "bf16"}, cfg),
    )  # fmt: skip
    want = predict("gemm", normalize("gemm", {"m": 1024, "n": 4096, "k": 4096}), cfg, "h200")
    assert row["model_ms"] == pytest.approx(want.ms) and row["model_binding"] == want.binding
    assert row["model_ms"] > row["predicted_ms"]  # the prediction sits above the roofline floor
    assert row["model_fraction"] == pytest.approx(want.ms / 0.06)


def test_explain_gemm_reports_the_model_beside_the_floor():
    from tilewise.explain.gemm import explain

    r = explain(m=64, n=24576, k=8192, gpu="h200").to_json()
    rf = r["roofline"]
    assert rf["model_ms"] > rf["time_s"] * 1e3 > 0 and rf["model_binding"] == "hbm"
