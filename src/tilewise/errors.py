"""User-facing errors.

A user mistake (an unknown GPU, a negative size, a tile that does not fit) raises
`InputError`, a `ValueError` whose message names what was expected and what was
given. The CLI prints that message on one line and exits with status 2; it never
shows a traceback for one.
"""

from __future__ import annotations

import importlib.util
import numbers


class InputError(ValueError):
    """Bad input from the user: the message says what was expected and what was given."""


def require(condition: bool, message: str) -> None:
    """Raise `InputError(message)` unless `condition` holds."""
    if not condition:
        raise InputError(message)


# The ceiling of every integer argument without a tighter one: counts up to 2^53 stay exact in a float,
# and products of a few of them stay far inside one (10^310 used to end in OverflowError deep in a model).
# Problem sizes have a tighter, hardware-derived ceiling in `tilewise.validate`.
SIZE_CAP = 2**53


def positive_int(name: str, value: object, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return `value` as an int, or raise naming `name`, the allowed range and what was given."""
    if maximum is None:
        maximum = SIZE_CAP
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        # Accept integral floats such as 64.0, refuse 64.5 and strings.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    value = int(value)
    shown = str(value) if abs(value) < 10**30 else f"a {len(str(abs(value)))}-digit number"
    if value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {shown}")
    if value > maximum:
        raise InputError(f"{name} must be an integer <= {maximum}, got {shown}")
    return value


def fraction(name: str, value: object, *, low: float = 0.0, high: float = 1.0) -> float:
    """Return `value` as a float in [low, high], or raise naming the range and what was given."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number in [{low}, {high}], got {value!r}") from None
    if not (low <= v <= high):
        raise InputError(f"{name} must be a number in [{low}, {high}], got {value!r}")
    return v


def parse_size(name: str, text: str | int) -> int:
    """Parse a byte size such as 48K, 227KB, 1M, 0x100 or 4096 into bytes (K = 1024)."""
    if isinstance(text, int) and not isinstance(text, bool):
        return positive_int(name, text, minimum=0)
    s = str(text).strip().upper().replace("IB", "").rstrip("B")
    mult = 1
    if s.endswith("K"):
        mult, s = 1024, s[:-1]
    elif s.endswith("M"):
        mult, s = 1024**2, s[:-1]
    elif s.endswith("G"):
        mult, s = 1024**3, s[:-1]
    try:
        value = float(s) * mult
    except ValueError:
        raise InputError(f"{name} must be a size in bytes such as 4096, 48K or 1M, got {text!r}") from None
    if value < 0 or not float(value).is_integer():
        raise InputError(f"{name} must be a whole, non-negative number of bytes, got {text!r}")
    return int(value)


def require_extra(module: str, extra: str) -> None:
    """Raise `InputError` naming the install extra when an optional module is missing."""
    if importlib.util.find_spec(module) is None:
        raise InputError(f"this needs the '{module}' package: pip install 'tilewise[{extra}]'")
