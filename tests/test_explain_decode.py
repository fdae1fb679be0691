"""`tilewise explain decode`: GQA group, split-KV by wave efficiency, bandwidth-bound time."""

import json

import pytest

import tilewise.explain.cli as explain_cli
from tilewise.cli import main
from tilewise.explain.decode import explain
from tilewise.model.decode import choose_num_splits


@pytest.fixture
def cli(monkeypatch):
    monkeypatch.setattr(explain_cli, "KINDS", {"decode": explain_cli.KINDS["decode"]})
    return main


def test_numbers():
    r = explain(batch=8, heads=32, kv_heads=8, seq_len=8192, gpu="h100-sxm")
    assert r["gqa"]["group"] == 4 and r["gqa"]["intensity"] == pytest.approx(4, rel=0.01)
    assert r["gqa"]["fill_mma"] == 0.25 and r["gqa"]["fill_wgmma"] == 4 / 64
    assert r["split_kv"]["splits"] == choose_num_splits(8, 8, 8192, 132)
    assert r["split_kv"]["efficiency"] > r["split_kv"]["efficiency_unsplit"]
    assert r["time"]["time_s"] >= r["time"]["bandwidth_time_s"]
    assert r["time"]["bandwidth_time_s"] == pytest.approx(r["problem"]["bytes"] / 3.35e12)
    # The decode GEMM, corrected: batch 64 is ~64 FLOP/B, still memory-bound.
    assert round(r["gemm"]["intensity_at_64"]) == 63 and r["gemm"]["bound_at_64"] == "memory"
    assert r["gemm"]["batch_for_compute_bound"] > 64


def test_long_single_sequence_splits():
    r = explain(batch=1, heads=32, kv_heads=8, seq_len=32768)
    assert r["split_kv"]["splits"] == 16 and r["split_kv"]["work_items_unsplit"] == 8


def test_h200_gemm_still_memory_bound():
    assert explain(gpu="h200")["gemm"]["bound_at_64"] == "memory"


def test_cli(cli, capsys):
    assert cli(["explain", "decode"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "groups of 4" in out and "Split-KV" in out and "memory-bound" in out
    assert cli(["explain", "decode", "--json", "--batch", "2", "--seq-len", "65536"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kind"] == "decode" and d["split_kv"]["splits"] > 1


@pytest.mark.parametrize(
    "args, text",
    [
        (["--kv-heads", "7"], "--heads must be a multiple of --kv-heads (GQA), got --heads=32, --kv-heads=7"),
        (["--seq-len", "0"], "--seq-len must be an integer >= 1, got 0"),
        (["--gpu", "x"], "unknown GPU 'x'"),
        (["--dtype", "int3"], "dtype must be one of"),
    ],
)
def test_cli_errors(cli, capsys, args, text):
    assert cli(["explain", "decode", *args]) == 2
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
