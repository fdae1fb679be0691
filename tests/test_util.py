import math

from hypothesis import given
from hypothesis import strategies as st

from tilewise.util import cdiv, next_power_of_2


@given(st.integers(0, 10**12), st.integers(1, 10**6))
def test_cdiv_matches_math_ceil(a, b):
    assert cdiv(a, b) == math.ceil(a / b) if a < 2**52 else cdiv(a, b) * b >= a > (cdiv(a, b) - 1) * b


@given(st.integers(-5, 10**9))
def test_next_power_of_2_is_smallest_power_at_least_n(n):
    p = next_power_of_2(n)
    assert p & (p - 1) == 0
    assert p >= max(n, 1)
    assert p == 1 or p // 2 < n
