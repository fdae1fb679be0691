"""`tilewise explain moe`: rows per expert, per-head routing's 1/H, short main loops."""

import json

import pytest

import tilewise.explain.cli as explain_cli
from tilewise.cli import main
from tilewise.explain.moe import balanced_rows, explain


@pytest.fixture
def cli(monkeypatch):
    monkeypatch.setattr(explain_cli, "KINDS", {"moe": explain_cli.KINDS["moe"]})
    return main


def test_per_head_cuts_rows_to_one_sixteenth():
    r = explain(heads=16)
    assert r["routing"]["ratio"] == 1 / 16
    assert r["routing"]["rows_per_expert_per_token"] == 512 and r["routing"]["rows_per_expert"] == 32
    assert r["routing"]["wgmma_m"] == 64
    ph, pt = r["per_head"], r["per_token"]
    assert ph["gate_up"]["m"] == 32 < 64 and ph["gate_up"]["wgmma_fill"] == 0.5
    assert pt["gate_up"]["wgmma_fill"] == 1.0
    assert ph["gate_up"]["k"] == 2048 // 16 and ph["gate_up"]["k_steps"] == 2
    assert ph["gate_up"]["prologue_epilogue_share"] > pt["gate_up"]["prologue_epilogue_share"]
    assert ph["peak_share_persistent"] < pt["peak_share_persistent"]
    assert any("wgmma's 64 rows" in a for a in r.advice)


def test_no_heads():
    r = explain()
    assert r["routing"]["ratio"] == 1
    with pytest.raises(KeyError):
        r["per_head"]


def test_balanced_rows():
    assert balanced_rows(10, 4) == [3, 3, 2, 2]
    assert sum(balanced_rows(32768, 1024)) == 32768


def test_cli(cli, capsys):
    assert cli(["explain", "moe", "--heads", "16"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "1/16 of before" in out and "wgmma's M is 64" in out and "prefix sum" in out
    assert cli(["explain", "moe", "--json", "--experts", "8", "--top-k", "2"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kind"] == "moe" and d["routing"]["rows_per_expert"] == 4096 * 2 / 8


@pytest.mark.parametrize(
    "args, text",
    [
        (["--top-k", "100"], "--top-k must be an integer <= 64, got 100"),
        (["--heads", "3"], "--d-model must be a multiple of heads, got --d-model=2048, --heads=3"),
        (["--tokens", "0"], "tokens must be an integer >= 1, got 0"),
    ],
)
def test_cli_errors(cli, capsys, args, text):
    assert cli(["explain", "moe", *args]) == 2
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_default_tiles_are_the_kernels():
    # explain moe predicts the tiles the grouped GEMM runs: model.waves.grouped_tile, which
    # tilewise.kernels.grouped_gemm.choose_config also reads
    from tilewise.model import waves

    r = explain(experts=128, tokens=128, top_k=8, d_model=2048, d_ff=768)  # 8 rows per expert
    assert (r.inputs["block_m"], r.inputs["block_n"], r.inputs["block_k"]) == waves.grouped_tile(8, 1536)
    assert r.inputs["block_m"] == 16
    r = explain(experts=16, tokens=2048, top_k=8, d_model=2048, d_ff=768)  # 1024 rows per expert
    assert r.inputs["block_m"] == 128
