"""Results describe the code that is there: a committed results file's kernel sources are those of its commit.

Every file under benchmarks/results/ records the commit it was measured at (`tilewise.bench.harness.
source_state`, in `meta` and on every row). `benchmarks/results/depends.json` declares, in one place, the
sources each file depends on; if `git diff <commit> HEAD` touches any of them, the figures describe code
that is gone, and this test fails until the file is re-measured (benchmarks/suites/quoted.sh re-measures
every file the README and docs quote) or marked as history (`"history": true` with a sentence `why`).
"""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DEPENDS = RESULTS / "depends.json"


def _all_json() -> list[str]:
    return sorted(p.relative_to(RESULTS).as_posix() for p in RESULTS.rglob("*.json") if p != DEPENDS)


def _results_files() -> list[str]:
    """The results files, less the raw parts of another (depends.json `parts`), which go with their file."""
    parts = json.loads(DEPENDS.read_text()).get("parts", {})
    return [f for f in _all_json() if f not in parts]


def _depends() -> dict:
    return json.loads(DEPENDS.read_text())


def _sources(entry: list[str], groups: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    for item in entry:
        out += groups[item] if item in groups else [item]
    return out


def _recorded_commits(doc: dict) -> set[str]:
    """The commits a results file says it was measured at: meta's and every row's."""
    found = set()
    meta = doc.get("meta")
    if isinstance(meta, dict) and meta.get("commit"):
        found.add(meta["commit"])
    rows = doc.get("rows")
    if isinstance(rows, list):
        found |= {r["commit"] for r in rows if isinstance(r, dict) and r.get("commit")}
    return found


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60)


def test_every_results_file_declares_its_sources():
    dep = _depends()
    groups, files = dep["groups"], dep["files"]
    assert set(files) == set(_results_files()), (
        "benchmarks/results/depends.json must list exactly the results files: "
        f"missing {sorted(set(_results_files()) - set(files))}, stale {sorted(set(files) - set(_results_files()))}"
    )
    for part, parent in dep.get("parts", {}).items():
        assert part in _all_json() and parent in files, f"depends.json parts: {part} -> {parent}"
    for name, entry in files.items():
        for src in _sources(entry, groups):
            assert src in groups or list(ROOT.glob(src.rstrip("/"))), f"{name}: source {src} does not exist"


def test_history_files_say_why():
    for name in _results_files():
        doc = json.loads((RESULTS / name).read_text())
        if doc.get("history"):
            why = doc.get("why", "")
            assert isinstance(why, str) and len(why.split()) >= 6 and why.rstrip().endswith("."), (
                f"{name} is marked history: give a sentence `why` (what changed since it was measured)"
            )


def _code_of(text: str) -> str | None:
    """A Python file's code without its comments and docstrings (None if it does not parse)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False)


def _changed_code(commit: str, paths: list[str]) -> list[str]:
    """Of the files that differ between `commit` and HEAD, those whose code differs: a change to comments or
    docstrings alone leaves the measured figures describing the code."""
    out = []
    for path in paths:
        if not path.endswith(".py"):
            out.append(path)
            continue
        old = _git("show", f"{commit}:{path}")
        new = _git("show", f"HEAD:{path}")
        if old.returncode != 0 or new.returncode != 0:  # added or removed
            out.append(path)
        elif _code_of(old.stdout) is None or _code_of(old.stdout) != _code_of(new.stdout):
            out.append(path)
    return out


def _has_git() -> bool:
    return (ROOT / ".git").exists() and _git("rev-parse", "HEAD").returncode == 0


def _stale(name: str, doc: dict, sources: list[str]) -> tuple[list[str], list[str]]:
    """(why the file no longer describes the code, commits this clone does not have)."""
    commits = _recorded_commits(doc)
    if not commits or "unknown" in commits:
        return [f"{name}: records no commit (re-measure it, or mark it history with a why)"], []
    out, missing = [], []
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    if meta.get("dirty") is True:
        out.append(f"{name}: measured on a tree with uncommitted changes (meta.dirty)")
    for commit in sorted(commits):
        if _git("cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
            missing.append(f"{name}: {commit[:12]}")
            continue
        diff = _git("diff", "--name-only", commit, "HEAD", "--", *sources)
        assert diff.returncode == 0, diff.stderr
        changed = _changed_code(commit, diff.stdout.split())
        if changed:
            out.append(f"{name}: measured at {commit[:12]}; code changed since: {', '.join(changed[:6])}")
    return out, missing


def test_the_check_catches_a_changed_source():
    if not _has_git():
        pytest.skip("no git history here (a copy of the tree without .git): cannot compare commits")
    src = "src/tilewise/kernels/reduce.py"
    before = None  # a commit before the sum kernel's code last changed (not only its comments)
    for c in _git("log", "-n", "40", "--format=%H", "--", src).stdout.split():
        if _git("cat-file", "-e", f"{c}~1^{{commit}}").returncode == 0 and _changed_code(f"{c}~1", [src]):
            before = _git("rev-parse", f"{c}~1").stdout.strip()
            break
    if before is None:
        pytest.skip("history too shallow to find a commit before the sum kernel's code last changed")
    head = _git("rev-parse", "HEAD").stdout.strip()
    stale, _ = _stale("x.json", {"meta": {"commit": before}, "rows": [{"commit": before}]}, [src])
    assert len(stale) == 1 and "reduce.py" in stale[0]
    stale, _ = _stale("x.json", {"meta": {"commit": head, "dirty": False}, "rows": []}, [src])
    assert not stale
    stale, _ = _stale("x.json", {"meta": {"commit": head, "dirty": True}, "rows": []}, [src])
    assert stale and "uncommitted" in stale[0]
    stale, _ = _stale("x.json", {"meta": {"commit": "unknown"}}, [src])
    assert stale and "no commit" in stale[0]


def test_comments_and_docstrings_alone_do_not_count():
    a = 'def f(x):\n    """Old words."""\n    return x + 1  # a comment\n'
    b = 'def f(x):\n    """New words, longer."""\n    # another comment\n    return x + 1\n'
    c = 'def f(x):\n    """Old words."""\n    return x + 2\n'
    assert _code_of(a) == _code_of(b) != _code_of(c)


def test_current_files_were_measured_on_todays_sources():
    if not _has_git():
        pytest.skip("no git history here (a copy of the tree without .git): cannot compare commits")
    dep = _depends()
    stale, missing = [], []
    for name in _results_files():
        doc = json.loads((RESULTS / name).read_text())
        if doc.get("history"):
            continue
        s, m = _stale(name, doc, _sources(dep["files"][name], dep["groups"]))
        stale += s
        missing += m
    assert not stale, "results that no longer describe the code (re-measure, or mark history):\n" + "\n".join(stale)
    if missing:
        pytest.skip(f"commits not in this clone's history (a shallow clone?): {', '.join(missing)}")
