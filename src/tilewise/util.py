"""Small integer helpers shared by every layer (pure Python: the model, the reports and the kernels call them)."""

from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    """Ceiling of a / b for integers (b > 0): how many b-sized pieces cover a."""
    if not b > 0:  # one comparison: cdiv sits on kernels' launch paths
        from tilewise.errors import InputError

        raise InputError(f"cdiv's divisor must be a whole number >= 1, got {b!r}")
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1).

    Plain Python on purpose: `triton.next_power_of_2` is a jit-visible function and costs ~10 us per host call.
    """
    return 1 if n <= 1 else 1 << (n - 1).bit_length()
