"""`tilewise explain ffn`: FlashFFN's reasoning, every figure computed."""

import json

import pytest

from tilewise.cli import main
from tilewise.errors import InputError
from tilewise.explain import ffn
from tilewise.model import traffic


def test_default_numbers():
    r = ffn.explain()  # T 16384, d_model 2048 = 16 heads x 128, I 512 per head, H200
    assert r.inputs["head_dim"] == 128
    # unsplit: a [64, 2048] fp32 accumulator is 1024 registers per thread of a warpgroup > 255
    assert r["unsplit"]["accumulator_regs_per_thread_unsplit"] == 1024
    assert r["unsplit"]["accumulator_regs_per_thread_split"] == 64  # O [64, 128] fp32 over 128 threads: 64
    assert r["unsplit"]["x_tile_bytes_unsplit"] > r["unsplit"]["smem_limit_bytes"]
    # the split layer has the dense SwiGLU's FLOPs but an H x larger intermediate
    assert r["layer"]["flops"] == r["layer"]["dense_flops"] == traffic.mhffn_flops(16384, 16, 128, 512)
    assert r["layer"]["intermediate_bytes"] == 16 * r["layer"]["dense_intermediate_bytes"] == 256 * 2**20
    # unfused: memory-bound; fused: compute-bound with the weights in L2
    assert r["unfused"]["unfused_bound"] == "memory"
    assert r["m_bound"]["weights_fit_l2"] and r["m_bound"]["bound"] == "compute"
    assert r["m_bound"]["intensity_per_weight_byte"] == pytest.approx(128)  # = M in 16-bit types
    # N: the feed break-even 64 carries over; registers allow at most 128 at d_h = 128
    assert r["n_bound"]["up_break_even_n"] == pytest.approx(64)
    assert r["n_bound"]["max_block_n"] == 128
    p = r["prediction"]
    assert p["forward_speedup_bound"] > 2 and p["memory_ratio"] > 3
    assert p["backward_flops"]["split"] == 11 * 2 * 16384 * 16 * 128 * 512


STEPS = ["layer", "unsplit", "unfused", "n_bound", "m_bound", "prediction", "small_speedup"]


@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-sxm", "l40s", "b200"])
def test_every_step_in_order_with_its_prose(gpu):
    r = ffn.explain(gpu=gpu)
    assert [s.key for s in r.steps] == STEPS
    assert all(s.lines and s.values for s in r.steps)
    text = r.render()
    for i, s in enumerate(r.steps, 1):
        assert f"\n{i}. {s.title}\n" in text
    assert ("tmem_columns" in r["n_bound"]) == (gpu == "b200")  # Tensor Memory bounds N on Blackwell
    assert r.advice[-1].startswith("Training: the recompute backward")


def test_backward_flop_modes():
    u = 2 * 10 * 3 * 64 * 7
    assert ffn.mhffn_backward_flops(10, 3, 64, 7) == 6 * u
    assert ffn.mhffn_backward_flops(10, 3, 64, 7, "split") == 11 * u
    assert ffn.mhffn_backward_flops(10, 3, 64, 7, "atomic") == 8 * u
    with pytest.raises(InputError, match="mode must be one of"):
        ffn.mhffn_backward_flops(10, 3, 64, 7, "stored")


def test_more_heads_more_memory_same_flops():
    a, b = ffn.explain(heads=16), ffn.explain(heads=32)
    assert a["layer"]["intermediate_bytes"] * 2 == b["layer"]["intermediate_bytes"]
    assert a["layer"]["flops"] == b["layer"]["flops"]  # H doubles, d_h halves, I per head fixed


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(heads=0), "heads must be"),
        (dict(d_model=1000), "d_model must be a multiple of heads"),
        (dict(block_n=20), "block_n must be a multiple of 8"),
        (dict(dtype="fp8"), "dtype must be bf16 or fp16"),
        (dict(gpu="nope"), "unknown GPU"),
    ],
)
def test_bad_inputs(kw, match):
    with pytest.raises(InputError, match=match):
        ffn.explain(**kw)


def test_cli_text_and_json(capsys):
    assert main(["explain", "ffn", "--tokens", "4096", "--intermediate", "256"]) == 0
    out = capsys.readouterr().out
    assert "Why the unsplit FFN does not fit a flash kernel" in out and "Why the speedup is small" in out
    assert main(["explain", "ffn", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kind"] == "ffn" and {"unsplit", "unfused", "n_bound", "m_bound", "prediction"} <= set(d)
