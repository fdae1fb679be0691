"""One validation layer for problem sizes: every explain kind and the model entry points call it.

Three rules, each one function:

* `size(name, value)`: an integer (64 or 64.0, never True, 64.5 or "64") in a range. The default
  ceiling is the largest memory of any registry GPU in bytes: a tensor dimension longer than that
  cannot exist on any of them (each element takes at least one byte), and every product of a few
  such sizes stays far inside a float, so no later `float()` overflows.
* `fits_memory(gpu, tensors)`: the tensors a problem names must fit in the chosen GPU's memory
  together; the message lists them with their sizes.
* `bounded(name, count, limit)`: work that a report does in Python (one entry per expert, per
  sequence) stays below `limit` items, so no report takes more than a second.

Each raises `tilewise.errors.InputError` naming the argument, what was expected and what was given.
"""

from __future__ import annotations

from tilewise import gpus as _gpus
from tilewise.errors import InputError, whole


def _largest_memory() -> int:
    return max(g.memory_bytes for g in _gpus.list())


MAX_SIZE = _largest_memory()  # 180 GB (B200): no tensor dimension can be longer (a user's GPU file does not move it)

# Work limits: items a report walks in Python. Measured on the 2-core machine (2026-12-01,
# `explain moe --experts E --tokens 8E`): 1,024 experts 3 ms, 8,192 19 ms, 65,536 0.15 s (with
# --heads 16 the same), ~2.3 us per expert; 65,536 leaves a 6x margin under a second.
MAX_EXPERTS = 1 << 16


def size(name: str, value: object, *, minimum: int = 1, maximum: int | None = None, strings: bool = False) -> int:
    """`value` as an int in [minimum, maximum] (maximum defaults to `MAX_SIZE`), or `InputError`.

    `errors.whole` is the one implementation ("m must be an integer >= 1, got 0"); this only sets the
    default ceiling, the memory of the largest GPU in the registry.
    """
    why = "" if maximum is not None else " (no GPU in the registry holds more bytes)"
    return whole(
        name, value, minimum=minimum, maximum=MAX_SIZE if maximum is None else maximum, strings=strings, why=why
    )


def multiple(name: str, value: int, of: int, why: str) -> int:
    """`value` must be a multiple of `of` (`why` names the instruction or rule that asks it)."""
    if value % of:
        raise InputError(f"{name} must be a multiple of {of} ({why}), got {value}")
    return value


def fits_memory(gpu: _gpus.GPU, tensors: dict[str, int], what: str = "the problem") -> int:
    """Total bytes of `tensors` (name -> bytes); `InputError` if they exceed the GPU's memory."""
    total = sum(int(b) for b in tensors.values())
    if total > gpu.memory_bytes:
        listed = ", ".join(f"{k} {_human(b)}" for k, b in tensors.items())
        raise InputError(
            f"{what} must fit in the {gpu.name}'s {_human(gpu.memory_bytes)} of memory, got {_human(total)} ({listed})"
        )
    return total


def bounded(name: str, count: int, limit: int, why: str) -> int:
    """`count` items of Python work must stay at most `limit`."""
    if count > limit:
        raise InputError(f"{name} must be at most {limit:,} ({why}), got {count:,}")
    return count


def _human(n: int) -> str:
    x = float(n)
    for unit, s in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if x >= s:
            return f"{x / s:.3g} {unit}" if x < 1e30 else f"{x:.3g} B"
    return f"{x:.0f} B"


__all__ = ["MAX_EXPERTS", "MAX_SIZE", "bounded", "fits_memory", "multiple", "size"]
