"""Every input gets a right answer or a one-line refusal (regression tests, one per case).

Each case was a traceback, a stall or a wrong sentence before; each assertion checks the answer
against a count made here from the problem, not against the report's own numbers.
"""

from __future__ import annotations

import json
import time

import pytest
from helpers import cli, refused

from tilewise import gpus, validate
from tilewise.errors import InputError
from tilewise.explain import attention, decode, ffn, gemm, moe
from tilewise.model import decode as model_decode
from tilewise.model import traffic

HUGE = str(10**310)


# ----------------------------------------------------------------- tracebacks


@pytest.mark.parametrize(
    "plot, needle",
    [("/nonexistent/x.png", "existing folder"), ("x.txt", "must name a file ending in one of")],
)
def test_occupancy_plot_path_refused(plot, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    refused(["occupancy", "--threads", "256", "--registers", "64", "--plot", plot], capsys, needle)
    assert not list(tmp_path.iterdir())  # nothing written


def test_occupancy_plot_written(capsys, tmp_path):
    out = tmp_path / "occ.png"
    rc, text, _ = cli(["occupancy", "--threads", "256", "--registers", "64", "--plot", str(out)], capsys)
    assert rc == 0 and out.stat().st_size > 1000 and "plot written" in text


@pytest.mark.parametrize(
    "argv, name",
    [
        (["gemm", "--m", HUGE], "m"),
        (["attention", "--batch", HUGE], "batch"),
        (["decode", "--seq-len", HUGE], "seq_len"),
        (["ffn", "--tokens", HUGE], "tokens"),
        (["moe", "--tokens", HUGE], "tokens"),
        (["moe", "--d-ff", HUGE], "d_ff"),
    ],
)
def test_huge_sizes_refused(argv, name, capsys):
    err = refused(["explain", *argv], capsys, f"--{name.replace('_', '-')} must be an integer <= {validate.MAX_SIZE}")
    assert "311-digit number" in err  # what was given, without printing 311 digits


def test_decode_batch_that_cannot_fit_refused_quickly(capsys):
    t = time.process_time()
    # 10^12 sequences: the K/V cache alone would be 2 x 10^12 x 8 x 8192 x 128 x 2 bytes
    refused(["explain", "decode", "--batch", str(10**12)], capsys, "batch must be an integer <=")
    refused(["explain", "decode", "--batch", str(10**8)], capsys, "the K/V cache must fit")
    assert time.process_time() - t < 10  # milliseconds when bounded; a per-sequence loop would not finish


def test_decode_model_does_not_grow_with_batch():
    # 10^8 sequences of one token: the counts equal batch x one sequence, computed without a list
    t = time.process_time()
    da = model_decode.decode_attention(10**8, 32, 8, 1, 128, "bf16", "h200")
    assert time.process_time() - t < 1  # microseconds without a list; a list of 10^8 takes many seconds
    assert da.flops == 10**8 * traffic.decode_flops([1], 32, 128)
    assert da.bytes == 10**8 * traffic.decode_bytes([1], 32, 8, 128, "bf16")


@pytest.mark.parametrize("tile", [None, 128, 1.5, (64,), "64", (64, 128, 16), {"m": 64}])
def test_gemm_tile_types_refused(tile):
    with pytest.raises(InputError, match="tile must"):
        gemm.explain(tile=tile)


def test_gemm_tile_pair_accepted():
    assert gemm.explain(tile=(64, 128))["tiling"]["blocks"] == gemm.explain(tile="64x128")["tiling"]["blocks"] == 192


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["moe", "--experts", str(10**11)], "experts x heads must be at most 65536"),
        (["moe", "--experts", "8192", "--heads", "16", "--tokens", "4096"], "experts x heads must be at most"),
    ],
)
def test_work_bounded(argv, needle, capsys):
    t = time.process_time()
    refused(["explain", *argv], capsys, needle.replace("65536", "65,536"))
    assert time.process_time() - t < 10  # a hang guard: the refusal comes before any work


def test_largest_moe_allowed_answers_promptly():
    t = time.process_time()
    moe.explain(experts=validate.MAX_EXPERTS, tokens=8 * validate.MAX_EXPERTS, top_k=8, d_model=64, d_ff=64)
    assert time.process_time() - t < 10  # well under a second; 10 s of CPU says it blew up


# ----------------------------------------------------------------- silent wrong statements


def _text(r):
    return " ".join(r.render(10_000).split())


def test_gemm_m1_fragment_sentence_is_computed():
    r = gemm.explain(m=1)
    adv = " ".join(r.advice)
    assert "M = 64 gives" not in adv  # the literal of the old text
    # the smallest M with full 16-row fragments is 16; its intensity, counted here
    i16 = traffic.gemm_flops(16, 24576, 8192) / traffic.gemm_bytes(16, 24576, 8192, "bf16")
    assert f"(M = 16) would give only {i16:.0f} FLOP/B" in adv


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200", "a100-sxm"])
def test_gemm_compute_bound_m_is_the_decode_answer(gpu):
    k, n = 8192, 24576
    # independent: the first batch whose intensity reaches the balance, by linear scan
    bal = gpus.balance(gpus.get(gpu), "hbm", "bf16")
    m = 1
    while traffic.gemm_flops(m, n, k) / traffic.gemm_bytes(m, n, k, "bf16") < bal:
        m += 1
    adv = " ".join(gemm.explain(m=1, gpu=gpu).advice)
    assert f"compute-bound from M = {m}" in adv
    assert decode.explain(gpu=gpu)["gemm"]["batch_for_compute_bound"] == m
    if gpu == "h100-sxm":
        assert m == 311  # the figure the issue names for `explain decode` and the explorer


def test_gemm_residency_sentence_counts_slots():
    r = gemm.explain(m=4096, n=4096, k=4096, tile="128x256", block_k=32)  # 512 blocks, 128 registers
    w = r["waves"]
    assert w["blocks_per_sm"] == 2  # 256 threads x 128 registers: 2 blocks of 32K registers per SM
    text = _text(r)
    assert "all 512 blocks can be resident" not in text
    assert "264 of the 512 blocks are resident at a time" in text  # 132 SMs x 2


def test_gemm_load_per_sm_sentence_only_when_uneven():
    # 64 blocks on 132 SMs: no SM gets 2 blocks
    r = gemm.explain(m=64, n=8192, k=8192, tile="64x128", registers=64)
    assert r["tiling"]["blocks"] == 64 and r["waves"]["blocks_per_sm"] > 1
    text = _text(r)
    assert "2-vs-1" not in text and "68 SMs get no block at all" in text
    # 192 blocks on 132 SMs resident at once: 60 SMs run 2, 72 run 1
    assert "uneven 2-vs-1 load per SM" in _text(gemm.explain(registers=64))


def test_gemm_tile_larger_than_problem_said():
    r = gemm.explain(m=8, n=100, k=8, tile="64x128", block_k=16)
    notes = " ".join(r.notes)
    assert "larger than C [8, 100]" in notes and f"{100 * 8 * 100 / (64 * 128):.3g}%" in notes
    assert "block_k = 16 is longer than K = 8" in notes
    adv = " ".join(r.advice)
    assert "split K (e.g." not in adv  # one K step: nothing to split
    assert r["block"]["k_steps"] == 1


def test_moe_tiles_validated(capsys):
    refused(["explain", "moe", "--block-m", "7", "--block-n", "100000"], capsys, "--block-m must be an integer >= 16")
    refused(["explain", "moe", "--block-m", "24"], capsys, "--block-m must be a multiple of 16")
    refused(["explain", "moe", "--block-n", "100000"], capsys, "--block-n must be an integer <= 256")
    refused(["explain", "moe", "--dtype", "tf32"], capsys, "--dtype must be bf16 or fp16")


def test_moe_on_a100_talks_about_mma_sync():
    r = moe.explain(gpu="a100-sxm", heads=16)
    text = _text(r)
    assert "wgmma's M" not in text and "mma.sync's M is 16" in text
    assert r["routing"]["mma_m"] == 16
    # 32 rows per head-expert fill two 16-row slabs exactly
    assert r["per_head"]["gate_up"]["mma_fill"] == 1.0


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["attention", "--head-dim", "7"], "--head-dim must be a multiple of 16"),
        (["ffn", "--intermediate", "7"], "intermediate must be a multiple of 16"),
        (["attention", "--block-n", "7"], "--block-n must be an integer >= 16, got 7"),
        (["attention", "--block-n", "40"], "--block-n must be a multiple of 16"),
        (["ffn", "--d-model", "99999999999999", "--heads", "1"], "--d-model must be an integer <="),
        (["ffn", "--d-model", "4096", "--heads", "1"], "--d-model / heads (the head width d_h) must be"),
        (["gemm", "--m", "200000", "--k", "200000", "--n", "200000"], "A, B and C must fit"),
    ],
)
def test_messages_name_the_argument(argv, needle, capsys):
    err = refused(["explain", *argv], capsys, needle)
    assert "N must be" not in err


# ----------------------------------------------------------------- every registry GPU


@pytest.mark.parametrize("kind", ["gemm", "attention", "decode", "moe", "ffn"])
@pytest.mark.parametrize("gpu", gpus.names())
def test_every_kind_on_every_gpu(kind, gpu, capsys):
    rc, out, err = cli(["explain", kind, "--gpu", gpu, "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    g = gpus.get(gpu)
    assert d["gpu"]["arch"] == g.arch
    kinds = {v["kind"] for v in d["gpu"]["figures"].values()}
    assert kinds <= {"measured", "datasheet", "estimate"}
    assert ("measured" in kinds) == (gpu == "h200")  # only the H200's figures were measured on a device
    assert any("datasheet-derived" in n for n in d["notes"])
    rc, text, _ = cli(["explain", kind, "--gpu", gpu], capsys)
    assert rc == 0 and "datasheet-derived" in text
    if g.arch != "hopper" and kind in ("attention", "moe", "ffn"):
        assert "wgmma's" not in text  # the section speaks of this GPU's instruction


def test_attention_ampere_rules():
    r = attention.explain(gpu="a100-sxm")
    b = r["block"]
    assert b["threads"] == 256 and b["producer_registers"] is None  # no producer, no setmaxnreg
    assert r["mma"]["shape"] == [16, 8, 16] and r["mma"]["flops_per_instruction"] == 2 * 16 * 8 * 16
    # A100 bf16: 312 TFLOPS / (108 SMs x 1.41 GHz) = 2048 FLOPs per cycle per SM, 512 per Tensor Core
    assert r["mma"]["flops_per_cycle_per_sm"] == 2048 and r["mma"]["cycles_per_instruction"] == 8
    # every warp reads the whole K slice: 8 warps x 128 keys x 32 B + Q 128 rows x 32 B, over 128 B/cycle
    f = r["feed"]
    assert f["feed_cycles_per_k_step"] == (8 * 128 * 32 + 128 * 32) / 128
    assert f["compute_cycles_per_k_step"] == 2 * 128 * 128 * 16 / 2048
    assert f["ratio_q_in_registers"] == 1.0  # 16 rows per warp: just keeps up
    assert r["registers"]["limit"] == 255 and r["smem"]["limit_bytes"] == 163 * 1024


def test_attention_blackwell_rules():
    r = attention.explain(gpu="b200", block_m=128, consumers=2)
    assert "tmem" in r.to_json() and "registers" not in r.to_json()
    t = r["tmem"]
    assert t["columns"] == 2 * (128 + 128) and t["limit_columns"] == 512 and t["fits"]
    assert t["max_n"] == 128  # 2 x (N + 128) <= 512
    # tcgen05 m128 at 8192 FLOPs/cycle: 0.5 N compute vs 4 KB of A (32 cycles) + 0.25 N: N >= 128
    assert r["feed"]["break_even_n"] == 128 and r["feed"]["ratio_at_n"] == 1.0
    assert r["block"]["instruction"]["issue_threads"] == 1
    # 64-row tiles cannot be fed at any N: 0.25 N compute vs 16 + 0.25 N
    r64 = attention.explain(gpu="b200")
    assert r64["feed"]["break_even_n"] is None or r64.to_json()["feed"]["break_even_n"] is None
    assert any("128-row Q tiles" in a for a in r64.advice)


def test_attention_pcie_peak_named_right():
    text = _text(attention.explain(gpu="h100-pcie"))
    assert "H100 SXM's dense" not in text and "NVIDIA H100 PCIe 80GB's dense bf16 peak" in text


def test_ffn_blackwell_tmem_bound():
    r = ffn.explain(gpu="b200")
    nb = r["n_bound"]
    assert nb["tmem_columns"] == 2 * 64 + 128 and nb["max_block_n"] == (512 - 128) // 2 // 16 * 16
