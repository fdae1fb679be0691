"""Every script under benchmarks/ imports on the CPU (its main does not run: each has a __main__ guard), and
the shell scripts the README and docs name parse. A script that imports a name the package no longer has
fails here, not on the GPU machine."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
SCRIPTS = sorted(p for p in BENCH.rglob("*.py") if "__pycache__" not in p.parts)
LIBRARIES = {"common.py", "problems.py", "autotune_targets.py"}  # imported by the scripts beside them (or read by
# `tilewise calibrate FILE:NAME`), no main of their own
SHELL = sorted(BENCH.rglob("*.sh"))


def _runs_at_import(tree: ast.Module) -> list[str]:
    """Top-level statements that do work when imported (calls, loops, with, if other than the main guard)."""
    bad = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            continue  # constants (a call on the right runs too, but builds a value: checked by importing)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.If):
            t = node.test
            if isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__":
                continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            f = node.value.func  # sys.path.insert(...) / os.environ.pop(...) set up the imports below
            if isinstance(f, ast.Attribute) and ast.unparse(f).startswith(("sys.path.", "os.environ.")):
                continue
        if isinstance(node, ast.Try):
            continue  # an optional import
        bad.append(f"line {node.lineno}: {ast.unparse(node)[:60]}")
    return bad


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.relative_to(BENCH).as_posix())
def test_script_has_a_main_guard_and_does_nothing_at_import(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    assert not _runs_at_import(tree), f"{path.name} does work at import: {_runs_at_import(tree)}"
    if path.name not in LIBRARIES:
        assert 'if __name__ == "__main__":' in path.read_text(), f'{path.name}: no `if __name__ == "__main__":`'


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.relative_to(BENCH).as_posix())
def test_script_imports(path, monkeypatch):
    monkeypatch.syspath_prepend(str(path.parent))  # `from common import ...`, `import sweep`
    saved = set(sys.modules)
    name = "_bench_" + path.relative_to(BENCH).with_suffix("").as_posix().replace("/", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        for m in set(sys.modules) - saved:  # the sibling modules (common, sweep, problems) of this folder
            if m in ("common", "sweep", "problems") or m.startswith("_bench_"):
                del sys.modules[m]


@pytest.mark.parametrize("path", SHELL, ids=lambda p: p.relative_to(BENCH).as_posix())
def test_shell_script_parses(path):
    r = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def test_the_readme_lists_every_file():
    """benchmarks/README.md names every script, results file and data file under benchmarks/."""
    text = (BENCH / "README.md").read_text()
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "benchmarks"], capture_output=True, text=True)
    files = tracked.stdout.split() if tracked.returncode == 0 and tracked.stdout else None
    if files is None:  # a copy of the tree without git: what is on disk
        files = [
            p.relative_to(ROOT).as_posix() for p in BENCH.rglob("*") if p.is_file() and "__pycache__" not in p.parts
        ]
    missing = []
    for rel in files:
        path = Path(rel)
        if path.name == "README.md":
            continue
        short = path.relative_to("benchmarks").as_posix()
        if f"`{short}`" not in text and f"`{path.name}`" not in text and path.name not in text:
            missing.append(rel)
    assert not missing, f"benchmarks/README.md does not name: {missing}"
