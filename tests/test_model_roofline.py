"""Roofline per level and the L2-reuse model (tilewise.model.roofline)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilewise.errors import InputError
from tilewise.model import roofline as rf


def test_balance_295():
    b = rf.machine_balance("h100-sxm")
    assert round(b["hbm"]) == 295
    assert b["smem"] == pytest.approx(4096 / 128)
    assert b["l2"] < b["hbm"]


def test_kv_intensity_is_m():
    for m in (64, 128, 256):
        for n in (64, 128):
            for d in (64, 128):
                assert rf.kv_tile_intensity(m, n, d).intensity == m
    k = rf.kv_tile_intensity(64, 128, 128)
    assert k.kv_bytes == 2 * 128 * 128 * 2 and k.flops == 4 * 64 * 128 * 128


def test_hit_rate_78_percent():
    h = rf.hit_rate_for_compute_roof(64, "h100-sxm")
    assert h == pytest.approx(1 - 64 / (989.4e12 / 3.35e12), abs=1e-3)
    assert round(100 * h) == 78
    reuse = rf.l2_reuse(64, 0.80, "h100-sxm")
    assert reuse.hbm_intensity == pytest.approx(320)
    assert reuse.bound == "compute"
    assert rf.l2_reuse(64, 0.70, "h100-sxm").bound == "hbm"
    assert rf.hit_rate_for_compute_roof(400, "h100-sxm") == 0.0


def test_effective_bytes_and_ideal():
    assert rf.effective_hbm_bytes(1000, 0.75) == 250
    assert rf.ideal_hit_rate(64) == pytest.approx(1 - 1 / 64)


@given(st.floats(1, 1000), st.floats(0, 0.999), st.floats(0, 0.999))
def test_utilisation_monotone_in_hit_rate(intensity, h1, h2):
    lo, hi = sorted((h1, h2))
    a, b = rf.l2_reuse(intensity, lo), rf.l2_reuse(intensity, hi)
    assert 0 <= a.tensor_utilisation <= b.tensor_utilisation <= 1


def test_time_levels_binding():
    lv = rf.time_levels("h100-sxm", flops=1e12, hbm_bytes=1e9, l2_bytes=1e10)
    assert lv.binding == "l2" and lv.tensor_utilisation < 1
    lv2 = rf.time_levels("h100-sxm", flops=1e12, hbm_bytes=1e6)
    assert lv2.binding == "compute" and lv2.tensor_utilisation == 1
    assert "levels" in lv.to_dict()


def test_time_unchanged():
    r = rf.time("h100", 989.4e12, 3.35e12)
    assert r.time_s == pytest.approx(1.0, rel=1e-3)


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda: rf.effective_hbm_bytes(100, 1.5), r"hit_rate must be a number in \[0.0, 1.0\], got 1.5"),
        (lambda: rf.hit_rate_for_compute_roof(0), "intensity must be > 0"),
        (lambda: rf.l2_reuse(-1, 0.5), "intensity must be > 0"),
        (lambda: rf.ideal_hit_rate(0), "readers must be an integer >= 1, got 0"),
        (lambda: rf.machine_balance("nope"), "unknown GPU"),
    ],
)
def test_bad_input(call, text):
    with pytest.raises(InputError, match=text):
        call()
