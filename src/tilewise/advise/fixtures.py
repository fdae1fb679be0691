"""Read the sweep's fixtures (tests/data/sweeps/<gpu>/<family>.jsonl) into one record per problem.

Each line of a fixture is one timed config: family, key, problem, source ("space", "cublas", "sdpa",
"hand", "nmh"), config, tag, ms (or error). `load` groups them by problem and checks every line;
a missing or malformed file is an InputError naming the file and the line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from tilewise.errors import InputError

FAMILIES = ("gemm", "attention", "decode", "grouped")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DEFAULT_DIR = os.path.join(ROOT, "tests", "data", "sweeps", "h200")


@dataclass
class ProblemRecord:
    family: str
    key: str
    problem: dict[str, Any]
    space: dict[str, Any] = field(default_factory=dict)  # tag -> ms
    configs: dict[str, Any] = field(default_factory=dict)  # tag -> config dict
    others: dict[str, Any] = field(default_factory=dict)  # source -> (tag, ms, config)
    errors: dict[str, Any] = field(default_factory=dict)  # tag -> error text

    def best(self) -> tuple[str, float]:
        tag = min(self.space, key=lambda t: self.space[t])
        return tag, self.space[tag]


def load(family: str, directory: str | None = None) -> dict[str, ProblemRecord]:
    if family not in FAMILIES:
        raise InputError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")
    d = directory or DEFAULT_DIR
    path = os.path.join(d, f"{family}.jsonl")
    if not os.path.isfile(path):
        raise InputError(f"sweep fixture {path} must exist (benchmarks/sweeps/sweep.py writes it), got no such file")
    out: dict[str, ProblemRecord] = {}
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                key, prob, source = r["key"], r["problem"], r.get("source", "space")
                if not isinstance(prob, dict) or not isinstance(key, str):
                    raise TypeError("key must be a string and problem an object")
            except (ValueError, KeyError, TypeError) as e:
                raise InputError(
                    f"{path} line {i} must be a JSON row with key, problem, source and ms, got {line[:80]!r} ({e})"
                ) from None
            rec = out.setdefault(key, ProblemRecord(family, key, prob))
            tag = r.get("tag", source)
            ms = r.get("ms")
            if ms is None:
                rec.errors[tag] = r.get("error", "no time")
                continue
            if not isinstance(ms, (int, float)) or not ms > 0:
                raise InputError(f"{path} line {i}: ms must be a positive number, got {ms!r}")
            if source == "space":
                rec.space[tag] = float(ms)
                rec.configs[tag] = r["config"]
            else:
                rec.others[source] = (tag, float(ms), r.get("config"))
    if not out:
        raise InputError(f"sweep fixture {path} must hold at least one timed row, got none")
    return {k: v for k, v in out.items() if v.space}


def meta(directory: str | None = None) -> dict[str, Any]:
    path = os.path.join(directory or DEFAULT_DIR, "meta.json")
    try:
        with open(path) as f:
            data: dict[str, Any] = json.load(f)
            return data
    except (OSError, ValueError):
        return {}
