"""`tilewise explain gemm` reproduces the decode GEMM's figures (docs/sources.md) by computation."""

import json

import pytest

from tilewise import validate
from tilewise.cli import main
from tilewise.errors import InputError
from tilewise.explain.gemm import explain
from tilewise.model import waves


def test_seed_numbers():
    r = explain(gpu="h100-sxm")  # C[64, 24576] = A[64, 8192] x B[8192, 24576], 64x128 tiles, BLOCK_K 16, on an H100 SXM
    assert r["tiling"]["blocks"] == 192  # "切成 192 个 Block"
    assert r["waves"]["sms"] == 132
    assert round(r["waves"]["waves"], 2) == 1.45  # 192 / 132
    assert r["waves"]["tail_blocks"] == 60
    assert r["block"]["threads"] == 256 and r["block"]["warps"] == 8  # 256 threads = 8 warps
    assert r["block"]["a_tile_bytes"] == 2048 and r["block"]["b_tile_bytes"] == 4096  # 2KB + 4KB
    assert r["block"]["k_steps"] == 512  # 8192 / 16
    assert r["mma"]["flops_per_mma"] == 8192  # 16x16x16 x 2
    assert round(r["roofline"]["balance"]) == 295  # 989.4 / 3.35
    assert r["roofline"]["bound"] == "memory"
    assert r["problem"]["b_bytes"] == 384 * 2**20  # 8192 x 24576 x 2 B = 384 MiB of weights
    assert r["roofline"]["intensity"] == pytest.approx(63.3, abs=0.1)  # ~64 FLOP/B at M = 64
    assert r["padding"]["fill_m1"] == 1 / 16  # 1 of 16 rows: 6.25%
    assert r["padding"]["fill_m16"] == 1.0
    assert r["occupancy"]["blocks_per_sm"] >= 1
    # "64 FLOP/B is still below 295" is said in the advice
    assert any("still below 295" in a for a in r.advice)


STEPS = ["problem", "tiling", "waves", "block", "mma", "traffic", "roofline", "padding", "occupancy"]


@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-sxm", "b200"])
def test_every_step_in_order_with_its_prose(gpu):
    r = explain(gpu=gpu)
    assert [s.key for s in r.steps] == STEPS
    assert all(s.lines and s.values for s in r.steps)
    text = r.render()
    for i, s in enumerate(r.steps, 1):
        assert f"\n{i}. {s.title}\n" in text
    assert "model_ms" in r["roofline"]  # the time model beside the floor (bf16)
    assert len(r.advice) == 3  # memory-bound; how to stream B; the tail wave (M = 64 fills its fragments)


def test_tiling_cuts_traffic_by_ts():
    # With TS x TS tiles, HBM traffic drops to 1/TS
    r = explain(m=4096, n=4096, k=4096, tile="32x32", block_k=32, threads=1024)
    assert r["traffic"]["reduction"] == pytest.approx(32, rel=0.01)
    assert r["traffic"]["a_reads"] == 4096 // 32


def test_batch_one_pads_fragments():
    r = explain(m=1)
    assert r["padding"]["fill_m16"] == pytest.approx(0.0625)
    assert r["roofline"]["intensity"] < 2  # GEMV: ~1 FLOP/B
    assert any("6.25%" in a for a in r.advice)


def test_json_and_text(capsys):
    assert main(["explain", "gemm", "--gpu", "h100-sxm"]) == 0
    text = capsys.readouterr().out
    for needle in ("192 blocks", "1.45 waves", "2 KB", "4 KB", "512 steps", "8192 FLOPs", "295 FLOP/B", "6.25%"):
        assert needle in text, needle
    assert main(["explain", "gemm", "--json", "--m", "128"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["kind"] == "gemm" and d["inputs"]["m"] == 128 and d["tiling"]["blocks"] == 2 * 192
    for key in ("problem", "tiling", "waves", "block", "mma", "traffic", "roofline", "padding", "occupancy", "advice"):
        assert key in d


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--m", "0"], "m must be an integer >= 1, got 0"),
        (["--n", "-5"], "n must be an integer >= 1, got -5"),
        (["--gpu", "h300"], "unknown GPU 'h300'"),
        (["--tile", "64x512"], "tile N must be an integer <= 256, got 512"),
        (["--tile", "abc"], "tile must look like MxN"),
        (["--threads", "2048"], "threads must be an integer <= 1024, got 2048"),
        (["--registers", "300"], "registers must be an integer <= 255, got 300"),
        (["--dtype", "int4"], "dtype must be one of"),
        (["--tile", "64x256", "--block-k", "256", "--stages", "4"], "bytes of shared memory must fit the"),
    ],
)
def test_bad_input(argv, needle, capsys):
    assert main(["explain", "gemm", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_non_integer_size_is_one_line_naming_the_option(capsys):
    assert main(["explain", "gemm", "--m", "1.5"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"tilewise: error: --m must be an integer from 1 to {validate.MAX_SIZE}, got '1.5'"
    ]


def test_python_api_raises_value_error():
    with pytest.raises(ValueError):
        explain(m=-1)
    with pytest.raises(InputError):
        explain(tile=(64, 300))


def test_waves_step_prices_stream_k_where_the_waves_leave_sms_idle():
    """The decode GEMM 64 x 24576 x 8192 in 64 x 128 tiles is 192 blocks: 1.45 waves, 72.7% of the SM-rounds. The
    step then says what stream-K's deal would do (model.waves.stream_k_summary); a grid of whole waves gets no
    such line."""
    r = explain(m=64, n=24576, k=8192, gpu="h200", tile=(64, 128))
    sk = r["waves"]["stream_k"]
    assert sk == waves.stream_k_summary(1, 192, r["block"]["k_steps"], 132)
    assert sk["busiest_steps"] == -(-192 * r["block"]["k_steps"] // 132) and sk["efficiency"] > 0.99
    step = next(s for s in r.steps if s.key == "waves")
    assert any(f"the busiest runs {sk['busiest_steps']} steps" in line for line in step.lines)
    full = explain(m=128 * 12, n=128 * 11, k=4096, gpu="h200", tile=(128, 128))  # 132 tiles: one whole wave
    assert "stream_k" not in full["waves"]
