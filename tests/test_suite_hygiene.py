"""The suite's own habits that keep it from flaking: no per-example deadline, no shared example database,
no fixed paths under /tmp (two xdist workers would share them), and time limits that only say "it hung"."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import settings

TESTS = Path(__file__).resolve().parent
FILES = sorted(p for p in TESTS.rglob("test_*.py"))


def test_hypothesis_profile_has_no_deadline_and_no_database():
    s = settings()
    assert s.deadline is None and s.database is None


def test_no_test_sets_a_finite_hypothesis_deadline():
    hits = [f"{p.name}:{n}" for p in FILES for n, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"deadline\s*=\s*(?!None)[\w.(]", line)]  # fmt: skip
    assert not hits, f"set no per-example deadline (the conftest profile has none): {hits}"


def test_no_fixed_tmp_paths():
    me = Path(__file__).name
    hits = [f"{p.name}:{n}" for p in FILES if p.name != me for n, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"[\"']/tmp/", line)]  # fmt: skip
    assert not hits, f"use tmp_path (one per test and worker), not a fixed /tmp path: {hits}"


def test_wall_clock_limits_are_hang_guards():
    """A literal limit on a measured time is at least 1 s: below that a loaded 2-core machine is a flake."""
    pattern = re.compile(r"(?:perf_counter|process_time|monotonic)\(\)\s*-\s*\w+\s*<=?\s*([0-9.]+)")
    hits = []
    for p in FILES:
        for n, line in enumerate(p.read_text().splitlines(), 1):
            m = pattern.search(line)
            if m and float(m[1]) < 1:
                hits.append(f"{p.name}:{n}: < {m[1]} s")
    assert not hits, hits
