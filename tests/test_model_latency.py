"""Little's law capped by occupancy (tilewise.model.latency)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilewise.errors import InputError
from tilewise.model import latency as lat


def test_littles_law():
    assert lat.littles_law(600, 13.9) == pytest.approx(8340)


def test_memory_h100():
    r = lat.warps_to_hide_memory(600, 16, gpu="h100-sxm")
    assert r.throughput_per_cycle == pytest.approx(3.35e12 / 132 / 1.83e9)
    assert r.in_flight_needed == pytest.approx(600 * 3.35e12 / 132 / 1.83e9)
    assert r.per_warp == 512 and r.warps_needed == 17 and r.hidden_fraction == 1
    # 4-byte loads need 4x the warps: more than an SM can hold.
    assert lat.warps_to_hide_memory(600, 4, gpu="h100-sxm").warps_needed > 64


def test_capped_by_occupancy():
    # 256 threads at 255 registers: one block of 8 warps per SM (the register limit).
    big = lat.warps_to_hide_memory(600, 4, threads=256, registers=255)
    assert big.resident_warps == 8 and big.limiter == "registers"
    assert big.hidden_fraction == pytest.approx(8 * 128 / big.in_flight_needed)
    assert big.hidden_fraction < 1


def test_issue():
    r = lat.warps_to_hide_issue(4, 1.0, 1)
    assert r.warps_needed == 16
    assert lat.warps_to_hide_issue(4, 1.0, 4).warps_needed == 4


def test_async_ring():
    a = lat.async_in_flight(2, 64 * 1024)
    assert a["covers"] and a["bytes_in_flight"] == 64 * 1024
    assert not lat.async_in_flight(1, 64 * 1024)["covers"]


@given(st.integers(1, 2000), st.sampled_from([4, 8, 16]), st.integers(1, 8))
def test_monotone(latency, b, ilp):
    a = lat.warps_to_hide_memory(latency, b, ilp)
    more = lat.warps_to_hide_memory(latency + 100, b, ilp)
    assert more.warps_needed >= a.warps_needed
    assert 0 < a.hidden_fraction <= 1


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda: lat.littles_law(-1, 1), "latency and throughput must be >= 0"),
        (lambda: lat.warps_to_hide_memory(600, 32), "bytes_per_thread_load must be an integer <= 16, got 32"),
        (lambda: lat.warps_to_hide_issue(4, 2.0), r"issue_per_cycle must be in \(0, 1\]"),
        (lambda: lat.warps_to_hide_memory(600, 16, threads=2048), "threads must be an integer <= 1024"),
    ],
)
def test_bad_input(call, text):
    with pytest.raises(InputError, match=text):
        call()


def test_loads_needed():
    r = lat.warps_to_hide_memory(600, 16, gpu="h100-sxm")
    assert r.loads_needed == 521  # ceil(8320.9 B / 16 B)
