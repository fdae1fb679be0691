"""The time model (tilewise.model.predict): its terms, its properties, its calibration, its inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tilewise.advise import fixtures, space
from tilewise.errors import InputError
from tilewise.model import predict as M

GEMM = {"m": 1024, "n": 4096, "k": 4096, "dtype": "bf16", "layout": "nt"}
CFG = {"block_m": 128, "block_n": 128, "block_k": 64, "group_m": 8, "split_k": 1, "num_warps": 4,
       "num_stages": 3, "persistent": False, "warp_specialize": False, "stream_b": False}  # fmt: skip


def test_terms_add_up_and_name_the_binding_term():
    p = M.predict("gemm", GEMM, CFG, "h200")
    assert p.ms > 0 and p.binding in p.terms
    names = p.detail["main_terms"]  # the overlapped terms: tensor_core, hbm, l2, per-program latency, ...
    assert {"tensor_core", "hbm", "l2"} <= set(names)
    main = M.overlap([p.terms[k] for k in names], M.machine("h200").overlap_p)
    assert max(p.terms[k] for k in names) <= main <= sum(p.terms[k] for k in names)
    extras = sum(v for k, v in p.terms.items() if k not in names and k not in M.SHARE_TERMS)
    assert p.ms == pytest.approx(main + extras)
    assert p.terms["launch"] > 0 and p.terms["prologue_epilogue"] >= 0
    d = p.to_dict()
    assert d["ms"] == p.ms and d["calibrated"] is True and set(d["terms"]) == set(p.terms)


def test_fragment_padding_at_batch_1():
    """At batch 1 a 16-row fragment carries 1 useful row (15/16 of the MMA is padding)."""
    cfg = dict(CFG, block_m=16, block_n=128, block_k=256)
    p = M.predict("gemm", {"m": 1, "n": 24576, "k": 8192, "dtype": "bf16", "layout": "nn"}, cfg, "h200")
    assert p.binding == "hbm"
    even = p.terms["tensor_core"] - p.terms["wave_tail"]  # the Tensor-Core time spread evenly over the SMs
    assert p.terms["padding"] / even == pytest.approx(15 / 16, rel=1e-6)


def test_more_sms_never_slower():
    """The same problem and config on a GPU with twice the SMs (and twice the Tensor Cores) is never slower."""
    checked = 0
    for fam in fixtures.FAMILIES:
        recs = fixtures.load(fam)
        for rec in list(recs.values())[::3]:
            for tag in list(rec.space)[::4]:
                c = rec.configs[tag]
                a = M.predict(fam, rec.problem, c, "h200").ms
                b = M.predict(fam, rec.problem, c, "h200", constants={"sms": 264}).ms
                assert b <= a * (1 + 1e-9), (fam, rec.key, tag, a, b)
                checked += 1
    assert checked > 500


def test_memory_bound_time_follows_bandwidth():
    """Halving the HBM read bandwidth slows a batch-1 GEMM (memory-bound) and leaves 8192^3 (compute-bound) nearly alone."""
    c = dict(CFG, block_m=16, block_n=128, block_k=256, num_stages=4)
    small = {"m": 1, "n": 28672, "k": 4096, "dtype": "bf16", "layout": "nt"}
    base = M.machine("h200").read_bps / 1e12
    slow = M.predict("gemm", small, c, "h200", constants={"read_tbps": base / 2}).ms
    assert slow > 1.6 * M.predict("gemm", small, c, "h200").ms
    big = {"m": 8192, "n": 8192, "k": 8192, "dtype": "bf16", "layout": "nn"}
    c2 = dict(CFG, num_warps=8, block_n=256)
    assert (
        M.predict("gemm", big, c2, "h200", constants={"read_tbps": base / 2}).ms
        < 1.1 * M.predict("gemm", big, c2, "h200").ms
    )


def test_calibration_file_names_its_measurement():
    cal = M.calibration("h200")
    assert cal["measured"]["gpu"] == "NVIDIA H200" and cal["measured"]["triton"] == "3.6.0"
    c = cal["constants"]
    # the sweep's microbenchmarks: sustained clock under Tensor-Core load, read bandwidth, graph launch cost
    micro = json.load(open(os.path.join(fixtures.DEFAULT_DIR, "calib.json")))
    assert c["clock_mhz"] == micro["sustained_clock_mhz"] and c["read_tbps"] == micro["read_tbps"]
    assert 1000 < c["clock_mhz"] < 1980 and 3.0 < c["read_tbps"] < 4.8 and 0 < c["launch_us"] < 5
    # every config of the GEMM grid that fits the H200 has its own rates
    for cfg in space.gemm_grid():
        if not space.gemm_fits(cfg, 8192, 8192, 8192, "bf16", "h200"):
            tag = space.gemm_tag(cfg)
            assert 0.1 <= cal["configs"]["gemm"]["mma"][tag] <= 1.0, tag
    assert M.machine("h200").calibrated and not M.machine("a100-sxm").calibrated


def test_rates_come_from_the_calibration_and_nothing_else(monkeypatch):
    """A config the calibration has no rate for takes its family's fitted median (calibrate.py writes one per
    family and kind); a calibration without it is an InputError naming the key, never a guessed rate."""
    cal = M.calibration("h200")
    for fam in fixtures.FAMILIES:
        for kind in ("mma", "stream", "fixed"):
            assert f"{fam}_{kind}_eff_median" in cal["constants"], (fam, kind)
    odd = dict(CFG, block_m=64, block_n=64, block_k=32, num_stages=5)  # in no sweep: no rate of its own
    assert space.gemm_tag(odd) not in cal["configs"]["gemm"]["mma"]
    p = M.predict("gemm", GEMM, odd, "h200")
    assert p.detail["mma_eff"] == cal["constants"]["gemm_mma_eff_median"]
    assert p.detail["stream_eff"] == cal["constants"]["gemm_stream_eff_median"]
    lean = {**cal, "constants": {k: v for k, v in cal["constants"].items() if k != "gemm_mma_eff_median"}}
    monkeypatch.setattr(M, "calibration", lambda gpu: lean if gpu == "h200" else {})
    M.machine.cache_clear()
    try:
        with pytest.raises(InputError, match="gemm_mma_eff_median"):
            M.predict("gemm", GEMM, odd, "h200")
        assert (
            M.predict("gemm", GEMM, CFG, "h200").detail["mma_eff"] == cal["configs"]["gemm"]["mma"][space.gemm_tag(CFG)]
        )  # a config with its own rate needs no median
    finally:
        M.machine.cache_clear()


def test_datasheet_only_gpu_scales_with_its_datasheet():
    """An unmeasured GPU: the H200's ratios on its own datasheet (an H100 SXM streams 3.35/4.8 of the H200's HBM)."""
    h1, h2 = M.machine("h100-sxm"), M.machine("h200")
    assert h1.read_bps / h2.read_bps == pytest.approx(3.35 / 4.8)
    c = dict(CFG, block_m=16, block_n=128, block_k=256, num_stages=4)
    p = {"m": 1, "n": 28672, "k": 4096, "dtype": "bf16", "layout": "nt"}
    assert M.predict("gemm", p, c, "h100").ms > M.predict("gemm", p, c, "h200").ms
    assert M.predict("gemm", p, c, "h100").calibrated is False


@pytest.mark.parametrize(
    "kernel, gpu, err",
    [("conv", "h200", "kernel must be one of"), ("gemm", "h900", "unknown GPU")],
)
def test_bad_kernel_or_gpu(kernel, gpu, err):
    with pytest.raises(InputError, match=err):
        M.predict(kernel, GEMM, CFG, gpu)


def test_model_imports_no_torch():
    code = "import sys, tilewise.model.predict, tilewise.advise, tilewise.advise.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_narrow_rows_cost_what_the_uncopied_ab_row_measured():
    """Rows loaded 2 bytes per lane (pitch 4098 B) with the copy switched off: 333 x 7777 x 2049 fp16 a @ w.T at
    128 x 256 x 64 took 276.5 us on the H200 (benchmarks/sweeps/gemm_ab_h200.jsonl, `nopad`); the narrow-load
    term binds and gives it within 5%. Rows of an 8-byte pitch, 16-byte rows and one-row operands pay nothing."""
    cfg = {"block_m": 128, "block_n": 256, "block_k": 64, "group_m": 8, "num_warps": 8, "num_stages": 3}
    prob = {"m": 333, "n": 7777, "k": 2049, "dtype": "fp16", "layout": "nt"}
    with open(os.path.join(os.path.dirname(__file__), "..", "benchmarks", "sweeps", "gemm_ab_h200.jsonl")) as f:
        row = next(r for r in map(json.loads, f) if r["source"] == "nopad" and r["problem"] == prob)
    mp = pytest.MonkeyPatch()
    mp.setattr(M, "pads_operand", lambda *a: False)  # the A/B switched the launcher's copy off
    try:
        p = M.predict("gemm", prob, cfg)
    finally:
        mp.undo()
    assert p.binding == "narrow_loads"
    assert p.ms == pytest.approx(row["ms"], rel=0.05)
    assert [M.row_load_bytes(x) for x in (4098, 200, 6, 8192, 7)] == [2, 8, 2, 16, 1]
    for other in ({**prob, "k": 2048}, {**prob, "k": 2052}, {**prob, "m": 1, "n": 1}):
        assert "narrow_loads" not in M.predict("gemm", other, cfg).detail["main_terms"], other


def test_grouped_config_without_num_warps_is_refused_in_one_line():
    """The grouped model prices a config by its num_warps (its calibration tag names it): a config without it is
    an InputError naming the key, not a KeyError from inside the tag; the schedule defaults to the kernel's map."""
    p = {"experts": 8, "rows_per_expert": 8, "n": 1024, "k": 1024}
    with pytest.raises(InputError, match="needs num_warps"):
        M.predict("grouped", p, {"block_m": 16, "block_n": 128, "block_k": 64, "num_stages": 3}, "h200")
    c = {"block_m": 16, "block_n": 128, "block_k": 64, "num_stages": 3, "num_warps": 4}
    assert M.predict("grouped", p, c, "h200").ms == M.predict("grouped", p, {**c, "schedule": "map"}).ms
