"""Options the command line must not ignore or change silently, errors in the command line's spelling,
JSON that echoes normalised values, and report sentences that stay true at the edges."""

from __future__ import annotations

import json
import math

import pytest
from helpers import cli, refused

from tilewise import gpus
from tilewise.explain import attention, gemm
from tilewise.model import traffic


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["advise", "attention", "--layout", "nt"], "got --layout, which it does not use"),
        (["advise", "gemm", "--seq-len", "5"], "got --seq-len, which it does not use"),
        (["advise", "decode", "--causal"], "got --causal, which it does not use"),
        (["advise", "grouped", "--head-dim", "64"], "got --head-dim, which it does not use"),
        (["advise", "gemm", "--per-problem"], "--per-problem applies only with --validate"),
        (["advise", "gemm", "--sweep", "x"], "--sweep applies only with --validate"),
        (["advise", "--validate", "--per-problem"], "got it without --json"),
        (
            ["advise", "--validate", "--m", "5"],
            "--validate takes only --gpu, --sweep, --per-problem and --json, got --m",
        ),
        (["advise", "--validate", "--top", "3"], "got --top"),
    ],
)
def test_options_that_do_not_apply_are_refused(argv, needle, capsys):
    refused(argv, capsys, needle)


def test_advise_json_echoes_normalised_values(capsys):
    rc, out, err = cli(["advise", "attention", "--batch", "8", "--heads", "32", "--json"], capsys)
    assert rc == 0, err
    p = json.loads(out)["problem"]
    # every size an int, the derived ones filled in, as the model read them
    assert p == {"batch": 8, "heads": 32, "kv_heads": 32, "seq_q": 4096, "seq_k": 4096, "head_dim": 128,
                 "causal": False, "dtype": "bf16"}  # fmt: skip
    rc, out, _ = cli(["advise", "gemm", "--m", "64.0", "--n", "128", "--k", "256", "--dtype", "half", "--json"], capsys)
    assert rc == 2 or json.loads(out)["problem"] == {"m": 64, "n": 128, "k": 256, "dtype": "fp16", "layout": "nn"}


def test_fp32_gemm_says_it_runs_as_tf32(capsys):
    rc, out, _ = cli(["advise", "gemm", "--m", "256", "--n", "256", "--k", "256", "--dtype", "fp32"], capsys)
    assert rc == 0 and "runs on the Tensor Cores as tf32" in out
    rc, out, _ = cli(["advise", "gemm", "--m", "256", "--n", "256", "--k", "256", "--dtype", "fp32", "--json"], capsys)
    assert any("tf32" in n for n in json.loads(out)["notes"])
    r = gemm.explain(dtype="fp32")
    assert any("runs on the Tensor Cores as tf32" in n for n in r.notes)
    assert not any("tf32" in n for n in gemm.explain(dtype="bf16").notes)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["explain", "gemm", "--block-k", "7"], "--block-k must be a multiple of"),
        (["explain", "attention", "--heads", "6", "--kv-heads", "4"], "--heads must be a multiple of --kv-heads"),
        (["explain", "decode", "--seq-len", "-1"], "--seq-len must be an integer >= 1, got -1"),
        (["explain", "gemm", "--m", "-5"], "--m must be an integer >= 1, got -5"),  # not "blocks must be ..."
        (["explain", "gemm", "--m", "1" * 5000], "--m must be an integer <= "),
        (["explain", "gemm", "--m", "x" * 100_000], "characters)"),
        (["explain", "gemm", "--gpu", "a100", "--dtype", "fp8"], "A100 SXM4 80GB has no Tensor-Core rate for fp8"),
        (
            ["occupancy", "--threads", "256", "--registers", "32", "--smem", "100K", "--max-dynamic-smem", "48K"],
            "(the --max-dynamic-smem attribute, 49152 bytes)",
        ),
        (
            ["explain", "gemm", "--tile", "256x256", "--block-k", "512", "--stages", "16"],
            "bytes of shared memory must fit",
        ),
    ],
)
def test_errors_name_the_option_as_typed(argv, needle, capsys):
    err = refused(argv, capsys, needle)
    assert "dynamic_smem" not in err and "blocks must be" not in err
    assert len(err) < 1000  # a long argument is cut, not echoed


def test_occupancy_arithmetic_in_the_error_adds_up(capsys):
    err = refused(["occupancy", "--gpu", "h200", "--threads", "256", "--registers", "32", "--smem", "300K"], capsys, "")
    # whatever the message says, a stated sum must be right: 232448 is the H200's per-block limit
    g = gpus.get("h200")
    assert str(g.smem_per_block_optin) in err and "= 232448 per-block limit - 0 static" not in err.replace(
        f"{g.smem_per_block_optin} bytes = 232448 per-block limit - 0 static", ""
    )


# ------------------------------------------------------------------ sentences at the edges


def words(r) -> str:
    return " ".join(r.render(10_000).split())


def test_blackwell_attention_never_advises_an_infinite_n():
    r = attention.explain(gpu="b200")
    assert "inf" not in " ".join(r.advice).replace("info", "")
    assert "cannot be fed from shared memory at any N" in " ".join(r.advice)


def test_attention_at_one_query_uses_the_memory_floor():
    r = attention.explain(seq_q=1)
    text = words(r)
    flops = traffic.attention_flops(4, 16, 1, 1, 128)
    nbytes = traffic.attention_bytes(4, 16, 16, 1, 1, 128, "bf16")
    assert f"{flops / nbytes:.2g} FLOP/B if every byte" in text  # 0.5, not "0 FLOP/B"
    assert "the memory floor" in text and "less than a kernel launch takes" in text
    est = r["waves"]["estimate_s"]
    assert est >= nbytes / gpus.get("h100-sxm").hbm_bytes_per_s  # never below the time to move the bytes


def test_a_block_that_cannot_launch_is_not_said_to_fit():
    text = words(attention.explain(gpu="a100-sxm", stages=4))
    assert "does not launch" in text and "block(s) fit per SM" not in text.split("2. ")[1].split("3. ")[0]


@pytest.mark.parametrize("bad", ["no", "yes", 1, 0, None, "False"])
def test_causal_must_be_a_bool(bad):
    from tilewise.errors import InputError

    with pytest.raises(InputError, match="causal must be True or False"):
        attention.explain(causal=bad)


def test_every_report_sentence_is_finite_on_every_gpu():
    # no "inf", "nan" or division leftovers in any report's text on any registry GPU
    from tilewise.explain import decode, ffn, moe

    for key in gpus.names():
        for mod in (gemm, attention, decode, moe, ffn):
            text = words(mod.explain(gpu=key))
            for bad in (" inf", "inf ", " nan", "nan%", "inf%", "= 0 FLOP/B", "1e+"):
                assert bad not in text, (key, mod.__name__, bad)
            assert not math.isnan(0.0)
