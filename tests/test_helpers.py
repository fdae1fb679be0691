"""The shared test helpers themselves: the close check must catch what it promises to catch."""

from __future__ import annotations

import random

import numpy as np
import pytest
from helpers import assert_close, int_sentinel, poison_, poisoned, seed_everything


def test_assert_close_passes_within_tolerance():
    e = np.linspace(-1, 1, 50).reshape(5, 10)
    assert_close(e + 1e-7, e, atol=1e-6)
    assert_close(e * (1 + 1e-4), e, atol=0, rtol=2e-4)


def test_assert_close_reports_count_place_and_errors():
    e = np.zeros((4, 6))
    a = e.copy()
    a[1, 2] = 0.5
    a[3, 5] = -2.0
    with pytest.raises(AssertionError) as info:
        assert_close(a, e, atol=1e-3, what="C")
    msg = str(info.value)
    assert "C: 2 of 24 elements mismatch" in msg
    assert "(1, 2): got 0.5 want 0" in msg and "(3, 5)" in msg
    assert "max abs err 2 at (3, 5)" in msg


def test_assert_close_fails_on_unwritten_nan_and_wrong_inf():
    e = np.ones(8)
    a = poison_(np.ones(8))
    a[:6] = 1
    with pytest.raises(AssertionError, match="2 of 8 .*2 NaN where the reference is a number"):
        assert_close(a, e, atol=1.0)
    with pytest.raises(AssertionError, match="1 of 2"):
        assert_close([np.inf, 1.0], [-np.inf, 1.0], atol=1.0)
    assert_close([np.inf, np.nan], [np.inf, np.nan], atol=0, equal_nan=True)
    with pytest.raises(AssertionError, match="1 of 2"):
        assert_close([np.inf, np.nan], [np.inf, np.nan], atol=0)


def test_assert_close_rejects_shape_mismatch():
    with pytest.raises(AssertionError, match="shape"):
        assert_close(np.zeros(3), np.zeros((3, 1)), atol=1)


def test_poison_numpy_kinds():
    assert np.isnan(poisoned((3,), np.float32)).all()
    ints = poisoned((2, 2), np.int32)
    assert (ints == np.iinfo(np.int32).min).all() and int_sentinel(np.int32) == -(2**31)
    assert poisoned(4, np.bool_).all()
    with pytest.raises(TypeError):
        poison_([1.0, 2.0])


def test_seed_everything_repeats_python_and_numpy():
    seed_everything(5)
    first = (random.random(), np.random.rand())
    seed_everything(5)
    assert (random.random(), np.random.rand()) == first


def test_autouse_seed_differs_per_test_but_is_stable(seed):
    from helpers import seed_for

    assert seed == seed_for("tests/test_helpers.py::test_autouse_seed_differs_per_test_but_is_stable")


def test_poison_torch_and_allocator(poison):
    torch = pytest.importorskip("torch")
    t = poisoned((2, 3), torch.float16, device="cpu")
    assert torch.isnan(t).all()
    assert (poisoned(3, torch.int64, device="cpu") == torch.iinfo(torch.int64).min).all()
    poison(torch, "empty")
    assert torch.isnan(torch.empty(4)).all()
    assert_close(torch.ones(3, dtype=torch.float16), np.ones(3), atol=0)


def test_assert_close_takes_a_per_element_bound():
    e = np.zeros((2, 3))
    a = np.full((2, 3), 0.5)
    bound = np.array([[1.0, 1.0, 1.0], [1.0, 0.1, 1.0]])
    with pytest.raises(AssertionError, match=r"1 of 6 elements mismatch \(atol=per element, max 1.*\(1, 1\): got 0.5"):
        assert_close(a, e, atol=bound)
    assert_close(a, e, atol=bound[0])  # broadcast over rows
