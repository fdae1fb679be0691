"""`tilewise explain attention` reproduces FA3's tile-size figures (docs/sources.md) by computation."""

import json

import pytest

import tilewise.explain.cli as explain_cli
from tilewise.cli import main
from tilewise.errors import InputError
from tilewise.explain.attention import explain


@pytest.fixture
def cli(monkeypatch):
    # Only this kind: the test should not depend on other explain kinds being importable mid-work.
    monkeypatch.setattr(explain_cli, "KINDS", {"attention": explain_cli.KINDS["attention"]})
    return main


def test_seed_numbers():
    r = explain(gpu="h100-sxm")  # head dim 128, 64 rows per consumer, N = 128, bf16, on the document's GPU
    assert r["block"]["threads"] == 384 and r["block"]["warps"] == 12  # 1 producer + 2 consumers
    assert r["block"]["rows_per_block"] == 128
    assert r["wgmma"]["shape"] == [64, 128, 16]
    assert r["wgmma"]["k_slices"] == 8  # 128 cut into 8 k16 slices
    assert r["wgmma"]["flops_per_instruction"] == 2 * 64 * 128 * 16
    assert r["wgmma"]["flops_per_cycle_per_sm"] == 4096
    assert r["wgmma"]["macs_per_tensor_core_per_cycle"] == 512
    assert r["wgmma"]["sms"] == 132 and r["wgmma"]["clock_ghz"] == 1.83
    assert round(r["wgmma"]["peak_tflops"], 1) == 989.4  # 4096 x 132 x 1.83 GHz
    f = r["feed"]
    assert f["a_cycles"] == 16 and f["b_cycles_per_n"] == 0.25 and f["compute_cycles_per_n"] == 0.5
    assert f["break_even_n"] == 64  # 0.5 N >= 16 + 0.25 N
    assert {k: round(v, 2) for k, v in f["ratios"].items()} == {"64": 1.0, "128": 1.33, "256": 1.6}
    assert f["limit_ratio"] == 2 and f["rs_ratio"] == 2 and f["published"] is False
    g = r["registers"]
    assert g["s"] == 64 and g["o"] == 64  # N/2 and d/2
    assert g["at_n256_accumulators"] == 192 and g["limit"] == 255  # 192 of 255
    assert g["at_n256_fits"] is False and g["fits"] is True
    assert r["smem"]["total_bytes"] == 160 * 1024 and r["smem"]["limit_bytes"] == 227 * 1024
    h = r["hbm"]
    assert h["kv_tile_bytes"] == 2 * 128 * 128 * 2
    assert h["intensity_per_consumer"] == 64  # KV bytes -> intensity = M
    assert round(h["balance"]) == 295
    assert h["shortfall"] > 4  # "more than 4x short"
    assert round(100 * h["needed_hit_rate_m64"]) == 78  # ~78%
    assert h["at_80_percent"]["bound"] == "compute"


# The walk's steps in order, per MMA family (wgmma; mma.sync on Ampere and Ada; tcgen05 with Tensor Memory)
STEPS = {
    "h100-sxm": ["problem", "block", "wgmma", "feed", "registers", "smem", "hbm", "pipeline", "waves"],
    "a100-sxm": ["problem", "block", "mma", "feed", "registers", "smem", "hbm", "pipeline", "waves"],
    "l40s": ["problem", "block", "mma", "feed", "registers", "smem", "hbm", "pipeline", "waves"],
    "b200": ["problem", "block", "mma", "feed", "tmem", "smem", "hbm", "pipeline", "waves"],
}


@pytest.mark.parametrize("gpu", STEPS)
def test_every_step_in_order_with_its_prose(gpu):
    r = explain(gpu=gpu, kv_heads=4)
    assert [s.key for s in r.steps] == STEPS[gpu]
    assert all(s.lines and s.values for s in r.steps)
    text = r.render()
    for i, s in enumerate(r.steps, 1):
        assert f"\n{i}. {s.title}\n" in text
    assert "GQA: 4 query heads share each K/V head" in " ".join(text.split())
    # one line per design, each followed by its timeline
    assert sum(line.endswith("tiles.") for line in r.steps[-2].lines) == 3


def test_gqa_multiplies_m():
    r = explain(heads=32, kv_heads=4)
    assert r["hbm"]["gqa_group"] == 8
    assert r["hbm"]["gqa_m"] == 64 * 8


def test_intensity_does_not_depend_on_n_or_d():
    for n in (64, 128, 176):
        for d in (64, 128):
            assert explain(block_n=n, head_dim=d)["hbm"]["intensity_per_consumer"] == 64


def test_pipeline_designs_ordered():
    p = explain()["pipeline"]["designs"]
    assert p["serial"]["tensor_utilisation"] <= p["ring"]["tensor_utilisation"] < p["pingpong"]["tensor_utilisation"]
    assert all(0 < d["tensor_utilisation"] <= 1 for d in p.values())


def test_causal_and_sizes():
    r = explain(batch=1, heads=8, seq_q=1000, seq_k=3000, causal=True, block_n=64, stages=3)
    assert r["waves"]["q_blocks_per_head"] == 8
    assert r["problem"]["flops"] < explain(batch=1, heads=8, seq_q=1000, seq_k=3000)["problem"]["flops"]
    assert r["registers"]["fits"]


def test_too_big_tiles_advised():
    r = explain(block_n=256, stages=4)
    assert not r["registers"]["fits"] and not r["smem"]["fits"]
    assert any("overflows the registers" in a for a in r.advice)
    assert any("4 stages need" in a for a in r.advice)


def test_text_and_json(cli, capsys):
    assert cli(["explain", "attention", "--gpu", "h100-sxm"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for s in ("4096", "989.4 TFLOPS", "N >= 64", "1.00 / 1.33 / 1.60", "192 of 255", "295", "78.3%", "Tensor Cores"):
        assert s in out, s
    assert cli(["explain", "attention", "--json", "--kv-heads", "2", "--causal"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kind"] == "attention" and d["inputs"]["kv_heads"] == 2 and d["inputs"]["causal"] is True
    assert d["hbm"]["gqa_group"] == 8


@pytest.mark.parametrize(
    "args, text",
    [
        (["--block-n", "100"], "--block-n must be a multiple of 16"),
        (["--heads", "12", "--kv-heads", "5"], "--heads must be a multiple of --kv-heads"),
        (["--gpu", "a100", "--dtype", "fp8"], "dtype must be bf16 or fp16"),
        (["--block-m", "48"], "--block-m must be a multiple of wgmma's M = 64, got 48"),
        (["--hit-rate", "1.5"], "--hit-rate must be in [0, 1], got 1.5"),
        (["--dtype", "fp8"], "dtype must be bf16 or fp16"),
        (["--batch", "0"], "batch must be an integer >= 1, got 0"),
    ],
)
def test_cli_errors(cli, capsys, args, text):
    assert cli(["explain", "attention", *args]) == 2
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bad_input_direct():
    with pytest.raises(InputError, match="head_dim must be an integer >= 1, got 0"):
        explain(head_dim=0)
