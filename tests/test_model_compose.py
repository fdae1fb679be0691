"""The composed predictions (`tilewise.model.compose`: moe, ffn, sum) against independent references: the parts
are the families' own predictions, the GEMM lists add up to `tilewise.model.traffic`'s FLOP counts, the stream
terms are the calibration file's constants applied by hand, and bad input is one InputError line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tilewise.advise import advise
from tilewise.errors import InputError
from tilewise.model import compose, traffic
from tilewise.model.predict import predict

CAL = json.loads((Path(__file__).resolve().parents[1] / "src/tilewise/model/calibration/h200.json").read_text())
C = CAL["constants"]
READ, LAUNCH, LAT = C["read_tbps"] * 1e12, C["launch_us"] * 1e-6, C["latency_us"] * 1e-6


def test_sum_is_bytes_over_the_calibrated_bandwidth_plus_latency_and_launch():
    for numel, outputs, dtype, e in ((1 << 28, 1, "fp32", 4), (12345, 7, "bf16", 2), (1, 1, "fp16", 2)):
        p = predict("sum", {"numel": numel, "outputs": outputs, "dtype": dtype}, {}, "h200")
        want = ((numel + outputs) * e / READ + LAT + LAUNCH) * 1e3
        assert p.ms == pytest.approx(want, rel=1e-12) and p.calibrated
    assert predict("sum", {"numel": 1 << 30}, {}, "h200").binding == "hbm"
    assert predict("sum", {"numel": 1000}, {}, "h200").binding in ("latency", "launch")


def _best_grouped_ms(p):
    return advise("grouped", p, "h200", top_k=1)[0].prediction.ms


def test_moe_is_its_grouped_gemms_routing_and_topk_sum():
    T, d, f, E, k = 4096, 2048, 768, 128, 8
    p = predict("moe", {"tokens": T, "d_model": d, "d_ff": f, "experts": E, "top_k": k}, {}, "h200")
    r = T * k // E
    up = _best_grouped_ms({"experts": E, "rows_per_expert": r, "n": 2 * f, "k": d})
    down = _best_grouped_ms({"experts": E, "rows_per_expert": r, "n": d, "k": f})
    routing = (T * E * 4 + T * k * 72) / READ + compose.ROUTING_LAUNCHES * (LAUNCH + LAT)
    topk = (T * k * d + T * d) * 2 / READ + LAUNCH + LAT
    assert p.terms["gate_up_gemm"] == pytest.approx(up) and p.terms["down_gemm"] == pytest.approx(down)
    assert p.terms["routing"] == pytest.approx(routing * 1e3) and p.terms["topk_sum"] == pytest.approx(topk * 1e3)
    assert p.ms == pytest.approx(up + down + (routing + topk) * 1e3)
    assert p.binding.split(".")[0] == max(p.terms, key=p.terms.get)
    # no routing (MH-MoE's expert forward) and top-1 (no sum): those parts go
    q = predict("moe", {"tokens": T, "d_model": d, "d_ff": f, "experts": E, "top_k": 1, "routing": False}, {}, "h200")
    assert set(q.terms) == {"gate_up_gemm", "down_gemm"}


def test_moe_takes_the_tiles_that_ran():
    """A GLU tile of block_n covers a gate and an up tile: the gate/up part is predicted 2 x block_n wide."""
    up = {"block_m": 64, "block_n": 64, "block_k": 64, "num_warps": 8, "num_stages": 3, "schedule": "inline"}
    down = {"block_m": 64, "block_n": 128, "block_k": 64, "num_warps": 8, "num_stages": 3, "schedule": "inline"}
    p = predict("moe", {"tokens": 512, "d_model": 2048, "d_ff": 768, "experts": 128, "top_k": 8},
                {"up": up, "down": down}, "h200")  # fmt: skip
    want = predict("grouped", {"experts": 128, "rows_per_expert": 32, "n": 1536, "k": 2048, "dtype": "bf16"},
                   {**up, "block_n": 128}, "h200")  # fmt: skip
    assert p.terms["gate_up_gemm"] == pytest.approx(want.ms)
    assert p.detail["parts"]["gate_up_gemm"]["config"]["block_n"] == 128 and up["block_n"] == 64  # not mutated


@pytest.mark.parametrize("backward", [None, "split", "atomic"])
def test_ffn_gemms_add_up_to_the_traffic_counts(backward):
    T, H, d, inter = 4096, 16, 128, 512
    gemms = compose._ffn_gemms(T, H, d, inter, backward)
    flops = sum(2 * H * rows * n * k for _, rows, n, k in gemms)
    want = traffic.mhffn_flops(T, H, d, inter) + (traffic.mhffn_backward_flops(T, H, d, inter, backward) if backward
                                                  else 0)  # fmt: skip
    assert flops == want
    p = predict("ffn", {"tokens": T, "heads": H, "head_dim": d, "intermediate": inter,
                        **({"backward": backward} if backward else {})}, {}, "h200")  # fmt: skip
    parts = [_best_grouped_ms({"experts": H, "rows_per_expert": rows, "n": n, "k": k}) for _, rows, n, k in gemms]
    assert p.ms == pytest.approx(sum(parts)) and len(p.terms) == len(gemms)


def test_composites_are_monotone_in_the_work():
    base = {"tokens": 2048, "d_model": 2048, "d_ff": 768, "experts": 64, "top_k": 4}
    assert predict("moe", {**base, "tokens": 8192}, {}).ms > predict("moe", base, {}).ms
    f = {"tokens": 4096, "heads": 16, "head_dim": 64, "intermediate": 256}
    assert predict("ffn", {**f, "backward": "split"}, {}).ms > predict("ffn", {**f, "backward": "atomic"}, {}).ms
    assert predict("ffn", f, {}).ms < predict("ffn", {**f, "backward": "atomic"}, {}).ms
    assert predict("sum", {"numel": 1 << 26}, {}).ms > predict("sum", {"numel": 1 << 20}, {}).ms


def test_datasheet_gpus_say_so():
    assert (
        predict("ffn", {"tokens": 4096, "heads": 16, "head_dim": 64, "intermediate": 256}, {}, "a100-sxm").calibrated
        is False
    )
    assert predict("sum", {"numel": 1 << 20}, {}, "b200").calibrated is False


@pytest.mark.parametrize(
    "kernel, problem, match",
    [
        ("moe", {"tokens": 0, "d_model": 8, "d_ff": 8, "experts": 4, "top_k": 2}, "tokens must be an integer"),
        ("moe", {"tokens": 8, "d_model": 8, "d_ff": 8, "experts": 4, "top_k": 5}, "top_k must be at most experts"),
        ("moe", {"tokens": 8, "d_model": 8, "d_ff": 8, "experts": 4, "top_k": 2, "dtype": "fp8"}, "dtype must be"),
        ("ffn", {"tokens": 8, "heads": 2, "head_dim": 64, "intermediate": 1.5}, "intermediate must be an integer"),
        ("ffn", {"tokens": 8, "heads": 2, "head_dim": 64, "intermediate": 64, "backward": "x"}, "backward must be"),
        ("sum", {"numel": 10**30}, "numel must be an integer"),
        ("sum", {"numel": True}, "numel must be an integer"),
        ("sum", {}, "numel must be an integer"),
    ],
)
def test_bad_input_is_one_line(kernel, problem, match):
    with pytest.raises(InputError, match=match):
        predict(kernel, problem, {}, "h200")
