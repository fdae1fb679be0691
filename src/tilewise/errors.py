"""User-facing errors.

A user mistake (an unknown GPU, a negative size, a tile that does not fit) raises
`InputError`, a `ValueError` whose message names what was expected and what was
given. The CLI prints that message on one line and exits with status 2; it never
shows a traceback for one.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import math
import numbers
import re
from collections.abc import Callable
from typing import Any, TypeVar, cast


class InputError(ValueError):
    """Bad input from the user: the message says what was expected and what was given.

    A message never echoes a long argument whole (a 100 KB string, a 5,000-digit number): any quoted or
    numeric run longer than 300 characters (a file path is shorter) is cut where it stands, and the
    whole line is kept under MESSAGE_CHARS, whichever function raised it.
    """

    def __init__(self, message: object = "") -> None:
        text = str(message)
        if len(text) > 300:
            text = _LONG_QUOTED.sub(lambda m: _cut(m.group(0)), text)
            text = _LONG_DIGITS.sub(lambda m: f"a {len(m.group(0))}-digit number", text)
            text = clip(text, MESSAGE_CHARS)
        super().__init__(text)


MESSAGE_CHARS = 1000
_LONG_QUOTED = re.compile(r"'[^'\n]{300,}'|\"[^\"\n]{300,}\"")
_LONG_DIGITS = re.compile(r"\d{31,}")


def _cut(quoted: str) -> str:
    return f"{quoted[:120]}...{quoted[0]} ({len(quoted) - 2:,} characters)"


def require(condition: bool, message: str) -> None:
    """Raise `InputError(message)` unless `condition` holds."""
    if not condition:
        raise InputError(message)


# The ceiling of every integer argument without a tighter one: counts up to 2^53 stay exact in a float,
# and products of a few of them stay far inside one (10^310 used to end in OverflowError deep in a model).
# Problem sizes have a tighter, hardware-derived ceiling in `tilewise.validate`.
SIZE_CAP = 2**53

SHOWN_CHARS = 80  # a given value longer than this is cut in a message (a 100 KB argument is not echoed whole)


def _digits(n: int) -> int:
    """Decimal digits of |n| without str() (Python refuses str() of ints past 4,300 digits)."""
    n = abs(n)
    if n < 10**18:
        return len(str(n))
    d = int(math.log10(n)) + 1  # exact to a digit for big n; checked against a power of ten below
    return d + 1 if n >= 10**d else d - 1 if n < 10 ** (d - 1) else d


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """How a message shows what was given: its repr, a huge integer as 'a 5000-digit number', a long
    repr cut to `limit` characters with its length said."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and abs(int(value)) >= 10**30:
        sign = "negative " if value < 0 else ""
        return f"a {sign}{_digits(int(value))}-digit number"
    if isinstance(value, str):
        t = value.strip()
        if len(t) > 30 and t.lstrip("+-").isdigit():
            return f"a {'negative ' if t.startswith('-') else ''}{len(t.lstrip('+-'))}-digit number"
    try:
        r = repr(value)
    except Exception:  # a repr that itself fails (a huge int inside a list, a broken __repr__)
        r = f"a {type(value).__name__}"
    if len(r) > limit:
        r = f"{r[: limit - 20]}... ({len(r):,} characters)"
    return r


def clip(text: str, limit: int = 300) -> str:
    """`text` cut to `limit` characters, saying how long it was (for messages quoting free text)."""
    return text if len(text) <= limit else f"{text[: limit - 20]}... ({len(text):,} characters)"


def _range(minimum: int, maximum: int | None) -> str:
    return f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"


def whole(
    name: str,
    value: object,
    *,
    minimum: int = 1,
    maximum: int | None = None,
    strings: bool = False,
    why: str = "",
) -> int:
    """The one validator of whole-number arguments: `value` as an int in [minimum, maximum], or InputError.

    Accepted: an int or numpy integer, an integral float (64.0); with `strings=True` (request bodies,
    CLI text) a string of digits. Refused, each naming `name`, the range and what was given: bool,
    64.5, nan, inf, other types, out-of-range values (a number with 5,000 digits is "<= N", not "not
    an integer"). `maximum` defaults to SIZE_CAP; `why` explains a ceiling ("(no GPU ... more bytes)").
    """
    hi = SIZE_CAP if maximum is None else maximum
    bad = f"{name} must be an integer {_range(minimum, hi)}"
    v: int
    if isinstance(value, bool):
        raise InputError(f"{bad}, got {value!r}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, float):
        if not value.is_integer():  # also nan and inf
            raise InputError(f"{bad}, got {shown(value)}")
        v = int(value)
    elif isinstance(value, str) and value.strip().lstrip("+-").isdigit() and (strings or len(value.strip()) > 30):
        t = value.strip()
        digits = t.lstrip("+-")
        if len(digits) > 30:  # past any ceiling: no int() of a 5,000-digit string
            if t.startswith("-"):
                raise InputError(f"{name} must be an integer >= {minimum}, got {shown(value)}")
            raise InputError(f"{name} must be an integer <= {hi}{why}, got {shown(value)}")
        v = int(t)
    else:
        raise InputError(f"{bad}, got {shown(value)}")
    if v < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {shown(v)}")
    if v > hi:
        raise InputError(f"{name} must be an integer <= {hi}{why}, got {shown(v)}")
    return v


def positive_int(name: str, value: object, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return `value` as an int, or raise naming `name`, the allowed range and what was given (`whole`)."""
    return whole(name, value, minimum=minimum, maximum=maximum)


def number(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> float:
    """A finite real number (not bool, not nan or inf) in [low, high] ((low, high] with low_open)."""
    lo = "-inf" if low is None else f"{low:g}"
    hi_s = "inf" if high is None else f"{high:g}"
    if low is None and high is None:
        want = f"{name} must be a finite number"
    elif high is None:
        want = f"{name} must be a finite number {'>' if low_open else '>='} {lo}"
    else:
        want = f"{name} must be a finite number in {'(' if low_open else '['}{lo}, {hi_s}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{want}, got {shown(value)}")
    try:
        v = float(value)
    except OverflowError:  # an int past a float's range
        raise InputError(f"{want}, got {shown(value)}") from None
    if not math.isfinite(v) or (low is not None and (v <= low if low_open else v < low)):
        raise InputError(f"{want}, got {shown(value)}")
    if high is not None and v > high:
        raise InputError(f"{want}, got {shown(value)}")
    return v


def fraction(name: str, value: object, *, low: float = 0.0, high: float = 1.0) -> float:
    """Return `value` as a float in [low, high], or raise naming the range and what was given.

    Numbers only (a bool is not one); a string of a number is accepted, as the CLI passes them."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InputError(f"{name} must be a number in [{low}, {high}], got {shown(value)}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a number in [{low}, {high}], got {shown(value)}")
    v = float(value)
    if not (low <= v <= high):  # nan fails both comparisons
        raise InputError(f"{name} must be a number in [{low}, {high}], got {shown(value)}")
    return v


def one_of(name: str, value: object, choices: dict[str, str] | tuple[str, ...]) -> str:
    """A name from `choices` (a tuple, or a dict of accepted spellings -> normal form), case-insensitive."""
    table = choices if isinstance(choices, dict) else {c: c for c in choices}
    key = value.strip().lower() if isinstance(value, str) else None
    if key is None or key not in table:
        listed = ", ".join(dict.fromkeys(table.values()) if isinstance(choices, dict) else choices)
        raise InputError(f"{name} must be one of {listed}, got {shown(value)}")
    return table[key]


def flag(name: str, value: object) -> bool:
    """A bool: True or False only (the string 'no' is not False, and not True either)."""
    if not isinstance(value, bool):
        raise InputError(f"{name} must be True or False, got {shown(value)}")
    return value


def known_keys(name: str, given: object, allowed: tuple[str, ...] | list[str]) -> dict[object, object]:
    """`given` must be a dict whose keys are all in `allowed`; the unknown ones are named."""
    if not isinstance(given, dict):
        raise InputError(f"{name} must be a dict with keys from {', '.join(allowed)}, got {shown(given)}")
    unknown = [k for k in given if k not in allowed]
    if unknown:
        raise InputError(
            f"{name} has unknown keys {shown(sorted(map(str, unknown)))}; expected keys from {', '.join(allowed)}"
        )
    return given


_F = TypeVar("_F", bound=Callable[..., Any])

# The annotations `typed` checks, spelled as they appear under `from __future__ import annotations`.
_KINDS = {
    "int": "int",
    "int | None": "int?",
    "float": "float",
    "float | None": "float?",
    "bool": "bool",
    "str": "str",
    "Sequence[int]": "ints",
    "Iterable[float]": "floats",
}


def _int_type(name: str, v: Any) -> int:
    """A whole number of either sign (the function checks its own range), at most SIZE_CAP in size."""
    if (
        isinstance(v, bool)
        or not isinstance(v, (numbers.Integral, float))
        or (isinstance(v, float) and not v.is_integer())
    ):
        raise InputError(f"{name} must be an integer, got {shown(v)}")
    n = int(v)
    if n > SIZE_CAP:
        raise InputError(f"{name} must be an integer <= {SIZE_CAP}, got {shown(n)}")
    if n < -SIZE_CAP:
        raise InputError(f"{name} must be an integer >= {-SIZE_CAP}, got {shown(n)}")
    return n


def _typed_value(kind: str, name: str, v: Any, minimum: int | None) -> Any:
    if v is None and kind.endswith("?"):
        return v
    if kind in ("int", "int?"):
        if type(v) is int and (minimum is None or v >= minimum) and -SIZE_CAP <= v <= SIZE_CAP:
            return v
        return _int_type(name, v) if minimum is None else whole(name, v, minimum=minimum)
    if kind in ("float", "float?"):
        if (type(v) is float and math.isfinite(v)) or (type(v) is int and abs(v) < 2**1000):
            return v
        number(name, v)  # raises for bool, nan, inf, strings; a numpy float passes unchanged
        return v
    if kind == "bool":
        return flag(name, v)
    if kind == "str":
        if not isinstance(v, str):
            raise InputError(f"{name} must be a string, got {shown(v)}")
        return v
    if kind in ("ints", "floats"):
        if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
            what = "integers" if kind == "ints" else "finite numbers"
            raise InputError(f"{name} must be a sequence of {what}, got {shown(v)}")
        if kind == "ints":
            lo = -SIZE_CAP if minimum is None else minimum
            if all(type(x) is int and lo <= x <= SIZE_CAP for x in v):
                return v  # unchanged (a tuple stays hashable for the caches behind it)
            if minimum is None:
                return [_int_type(f"{name}[{i}]", x) for i, x in enumerate(v)]
            return [whole(f"{name}[{i}]", x, minimum=minimum) for i, x in enumerate(v)]
        for i, x in enumerate(v):
            number(f"{name}[{i}]", x)
        return v
    return v


def _typed(fn: _F, minimum: int | None) -> _F:
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    # `gpu` is a name or a GPU whatever its annotation says: gpus.get checks it.
    checks = [
        (i, p.name, _KINDS[str(p.annotation)])
        for i, p in enumerate(params)
        if str(p.annotation) in _KINDS and p.name != "gpu"
    ]
    if not checks:
        return fn

    @functools.wraps(fn)
    def checked(*args: Any, **kw: Any) -> Any:
        a = list(args)
        for i, name, kind in checks:
            if i < len(a):
                a[i] = _typed_value(kind, name, a[i], minimum)
            elif name in kw:
                kw[name] = _typed_value(kind, name, kw[name], minimum)
        return fn(*a, **kw)

    return cast(_F, checked)


def typed(fn: _F) -> _F:
    """Check a public function's arguments against its annotations before it runs.

    `int` is a whole number (bool, 1.5, nan and strings refused; an integral float becomes an int;
    magnitude <= SIZE_CAP), `float` a finite real number, `bool` True or False, `str` a string,
    `Sequence[int]` integers, `X | None` also None. Ranges stay in the function, which names them.
    Each refusal is one InputError naming the parameter, what was expected and what was given.
    """
    return _typed(fn, None)


def counts(fn: _F) -> _F:
    """`typed`, with every `int` (and `Sequence[int]`) a count: a whole number >= 0 (0 gives 0 work)."""
    return _typed(fn, 0)


def cli_int(text: str) -> int | str:
    """argparse's `type` for whole-number options: a plain integer becomes an int; anything else (a word,
    1.5, a number with 5,000 digits) is passed on as typed, so the validator that reads it refuses it in
    one line naming the option, the range and what was given (argparse's "invalid int value" echoes the
    whole argument and cannot say what the range is)."""
    t = text.strip()
    if t.lstrip("+-").isdigit() and len(t) <= 30:
        return int(t)
    return text


def parse_size(name: str, text: str | int) -> int:
    """Parse a byte size such as 48K, 227KB, 1M, 0x100 or 4096 into bytes (K = 1024), at most SIZE_CAP."""
    if isinstance(text, numbers.Integral) and not isinstance(text, bool):
        return whole(name, text, minimum=0)
    if not isinstance(text, str):
        raise InputError(f"{name} must be a size in bytes such as 4096, 48K or 1M, got {shown(text)}")
    s = text.strip().upper().replace("IB", "").rstrip("B")
    mult = 1
    if s.endswith("K"):
        mult, s = 1024, s[:-1]
    elif s.endswith("M"):
        mult, s = 1024**2, s[:-1]
    elif s.endswith("G"):
        mult, s = 1024**3, s[:-1]
    s = s.strip()
    if s.lstrip("+-").isdigit() and len(s) > 30:
        return whole(name, s, minimum=0, strings=True)  # says "<= SIZE_CAP", never int() of 5,000 digits
    try:
        value = float(int(s, 16)) if s.startswith("0X") else float(s)
    except ValueError:
        raise InputError(f"{name} must be a size in bytes such as 4096, 48K or 1M, got {shown(text)}") from None
    value *= mult
    if not math.isfinite(value) or value < 0 or not value.is_integer():
        raise InputError(f"{name} must be a whole, non-negative number of bytes, got {shown(text)}")
    if value > SIZE_CAP:
        raise InputError(f"{name} must be at most {SIZE_CAP} bytes, got {shown(text)}")
    return int(value)


def require_extra(module: str, extra: str) -> None:
    """Raise `InputError` naming the install extra when an optional module is missing."""
    if importlib.util.find_spec(module) is None:
        raise InputError(f"this needs the '{module}' package: pip install 'tilewise[{extra}]'")
