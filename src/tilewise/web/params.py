"""Query-string parsing for the explorer's JSON endpoints.

Every endpoint reads its inputs through `Params`, which knows the names an endpoint
accepts and refuses anything else with an `InputError` whose message names the
parameter, what was expected and what was given. The server turns those into
400 responses; nothing a browser can type reaches the model unchecked.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Mapping

from tilewise import gpus as _gpus
from tilewise.errors import InputError, parse_size

MAX_VALUE_CHARS = 400  # longer values are refused before they are parsed


class Params:
    """The query parameters of one request, with typed, bounded accessors."""

    def __init__(self, query: Mapping[str, str] | list[tuple[str, str]], accepted: set[str] | frozenset[str]) -> None:
        items = list(query.items()) if isinstance(query, Mapping) else list(query)
        self.values: dict[str, str] = {}
        for name, value in items:
            if name not in accepted:
                known = ", ".join(sorted(accepted)) or "none"
                raise InputError(f"unknown parameter {name[:40]!r}; this endpoint accepts: {known}")
            if name in self.values:
                raise InputError(f"parameter {name!r} given more than once")
            if len(value) > MAX_VALUE_CHARS:
                raise InputError(f"{name} must be at most {MAX_VALUE_CHARS} characters, got {len(value)}")
            self.values[name] = value

    def has(self, name: str) -> bool:
        return name in self.values

    def int(self, name: str, default: int, lo: int, hi: int) -> int:
        if name not in self.values:
            return default
        text = self.values[name].strip()
        try:
            v = int(text, 10)
        except ValueError:
            raise InputError(f"{name} must be an integer in [{lo}, {hi}], got {text[:40]!r}") from None
        if not lo <= v <= hi:
            raise InputError(f"{name} must be an integer in [{lo}, {hi}], got {v}")
        return v

    def float(self, name: str, default: float, lo: float, hi: float) -> float:
        if name not in self.values:
            return default
        text = self.values[name].strip()
        try:
            v = float(text)
        except ValueError:
            raise InputError(f"{name} must be a number in [{lo}, {hi}], got {text[:40]!r}") from None
        if not math.isfinite(v) or not lo <= v <= hi:
            raise InputError(f"{name} must be a number in [{lo}, {hi}], got {text[:40]!r}")
        return v

    def size(self, name: str, default: builtins.int, lo: builtins.int, hi: builtins.int) -> builtins.int:
        """A byte size such as 4096, 48K or 1M (K = 1024)."""
        if name not in self.values:
            return default
        v = parse_size(name, self.values[name])
        if not lo <= v <= hi:
            raise InputError(f"{name} must be between {lo} and {hi} bytes, got {v}")
        return v

    def choice(self, name: str, default: str, options: tuple[str, ...] | list[str]) -> str:
        if name not in self.values:
            return default
        v = self.values[name].strip().lower()
        if v not in options:
            raise InputError(f"{name} must be one of {list(options)}, got {self.values[name][:40]!r}")
        return v

    def int_list(
        self, name: str, default: list[builtins.int], lo: builtins.int, hi: builtins.int, max_len: builtins.int
    ) -> list[builtins.int]:
        """Comma-separated integers, e.g. `rows=40,0,130`."""
        if name not in self.values:
            return list(default)
        text = self.values[name].strip()
        parts = [p.strip() for p in text.split(",")]
        if not text or not 1 <= len(parts) <= max_len:
            raise InputError(f"{name} must be 1 to {max_len} comma-separated integers, got {text[:40]!r}")
        out = []
        for p in parts:
            try:
                v = int(p, 10)
            except ValueError:
                raise InputError(f"{name} must hold integers in [{lo}, {hi}], got {p[:40]!r}") from None
            if not lo <= v <= hi:
                raise InputError(f"{name} must hold integers in [{lo}, {hi}], got {v}")
            out.append(v)
        return out

    def gpu(self, name: str = "gpu", default: str = _gpus.DEFAULT_GPU) -> _gpus.GPU:
        return _gpus.get(self.values.get(name, default).strip()[:40])
