"""Small integer helpers shared by every layer (pure Python: the model, the reports and the kernels call them)."""

from __future__ import annotations

import math
from typing import Any, TypeVar, cast

from tilewise.errors import whole

_T = TypeVar("_T")


def cdiv(a: int, b: int) -> int:
    """Ceiling of a / b for integers (b > 0): how many b-sized pieces cover a."""
    if type(a) is not int or type(b) is not int or b <= 0:  # two type checks: cdiv sits on launch paths
        a = whole("cdiv's dividend", a, minimum=-(2**63))
        b = whole("cdiv's divisor", b, minimum=1)
    return -(-a // b)


def json_safe(value: _T) -> _T:
    """`value` with every non-finite float (inf, nan) replaced by None, dicts and lists walked: what a
    `to_dict()` returns is strict JSON (json.dumps(..., allow_nan=False) accepts it). None reads as
    "no such figure" (a balance that is unbounded, a break-even N that does not exist)."""
    out: Any = value
    if isinstance(value, float):
        out = value if math.isfinite(value) else None
    elif isinstance(value, dict):
        out = {k: json_safe(v) for k, v in value.items()}
    elif isinstance(value, (list, tuple)):
        out = [json_safe(v) for v in value]
    return cast(_T, out)  # the same shape, non-finite floats as None


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1).

    Plain Python on purpose: `triton.next_power_of_2` is a jit-visible function and costs ~10 us per host call.
    """
    if type(n) is not int or n > 2**53:
        n = whole("n", n, minimum=-(2**63))
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
