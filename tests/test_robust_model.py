"""The model entry points: huge, non-finite and wrong-typed sizes are refused, not overflowed."""

from __future__ import annotations

import numpy as np
import pytest

from tilewise.errors import SIZE_CAP, InputError, positive_int
from tilewise.model import decode, roofline, waves

HUGE = 10**310


@pytest.mark.parametrize(
    "call",
    [
        lambda: waves.grid_waves(HUGE, 132),
        lambda: waves.tile_cost(64, 64, HUGE),
        lambda: decode.fragment_fill(HUGE),
        lambda: decode.decode_gemm_point(HUGE, 8, 8),
        lambda: decode.choose_num_splits(HUGE, 8, 8, 132),
        lambda: decode.batch_for_compute_bound(HUGE, 8),
    ],
)
def test_model_sizes_capped(call):
    with pytest.raises(InputError, match=f"must be an integer <= {SIZE_CAP}, got a 311-digit number"):
        call()


def test_cap_is_exact_in_a_float():
    assert float(SIZE_CAP) == SIZE_CAP and float(SIZE_CAP + 1) == SIZE_CAP  # 2^53: the last exact step
    assert positive_int("n", SIZE_CAP) == SIZE_CAP


@pytest.mark.parametrize(
    "flops, nbytes, needle",
    [
        (HUGE, 1, "flops must be a finite number >= 0, got a 311-digit number"),
        (1, HUGE, "bytes must be a finite number >= 0"),
        (float("nan"), 1, "flops must be a finite number >= 0, got nan"),
        (1, float("inf"), "bytes must be a finite number >= 0, got inf"),
        (-1, 1, "flops must be a finite number >= 0, got -1"),
        ("x", 1, "flops must be a number >= 0, got 'x'"),
        (True, 1, "flops must be a number >= 0, got True"),
    ],
)
def test_roofline_amounts_refused(flops, nbytes, needle):
    with pytest.raises(InputError, match=needle.replace("(", r"\(")):
        roofline.time("h100-sxm", flops, nbytes)


def test_roofline_accepts_numpy_numbers():
    r = roofline.time(
        "h100-sxm", np.int64(2 * 64 * 24576 * 8192), np.float64(2 * (64 * 8192 + 8192 * 24576 + 64 * 24576))
    )
    assert r.bound == "memory" and round(r.balance) == 295
