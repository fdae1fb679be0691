"""The CLI fails loudly on a broken import and names the extra only when an extra is really missing."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

import tilewise.cli as cli
import tilewise.explain.cli as explain_cli


def test_parser_imports_no_extra():
    code = (
        "import sys, tilewise.cli as c; c.build_parser(); "
        "print(sorted(m for m in ('torch', 'triton', 'starlette', 'uvicorn', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_area_and_kind_registers():
    p = cli.build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    assert {"explain", "gpus", "occupancy", "trace", "bench", "explore"} <= set(sub.choices)
    ex = next(a for a in sub.choices["explain"]._actions if isinstance(a, argparse._SubParsersAction))
    assert set(ex.choices) == set(explain_cli.KINDS)


def _break(monkeypatch, broken: str):
    real = importlib.import_module

    def fake(name, *a, **kw):
        if name == broken:
            raise ImportError(f"cannot import name 'x' from {broken!r}")
        return real(name, *a, **kw)

    monkeypatch.setattr(importlib, "import_module", fake)


@pytest.mark.parametrize("broken", ["tilewise.sim.cli", "tilewise.bench.cli", "tilewise.explain.moe"])
def test_a_broken_area_module_raises_instead_of_vanishing(monkeypatch, broken):
    _break(monkeypatch, broken)
    with pytest.raises(ImportError, match="cannot import name"):
        cli.build_parser()


def test_missing_extra_hint_only_for_the_extra_itself(monkeypatch):
    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "torch" else real_find(n, *a))
    hint = cli.missing_extra(ModuleNotFoundError("No module named 'torch'", name="torch"))
    assert hint == "this needs the 'torch' package: pip install 'tilewise[kernels]'"
    assert cli.missing_extra(ModuleNotFoundError("No module named 'torch._C'", name="torch._C")) is None
    assert cli.missing_extra(ImportError("cannot import name 'x'", name="torch")) is None
    assert cli.missing_extra(ModuleNotFoundError("No module named 'foo'", name="foo")) is None
    # installed (find_spec finds it) but failing to import: a broken install, not a missing extra
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object())
    assert cli.missing_extra(ModuleNotFoundError("No module named 'triton'", name="triton")) is None


def _command_raising(monkeypatch, err):
    def boom(a):
        raise err

    real = cli.build_parser

    def parser():
        p = real()
        sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices["gpus"].set_defaults(func=boom)
        return p

    monkeypatch.setattr(cli, "build_parser", parser)


def test_main_prints_one_line_for_a_missing_extra(monkeypatch, capsys):
    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "starlette" else real_find(n, *a))
    _command_raising(monkeypatch, ModuleNotFoundError("No module named 'starlette'", name="starlette"))
    assert cli.main(["gpus"]) == 2
    err = capsys.readouterr().err
    assert err == "tilewise: error: this needs the 'starlette' package: pip install 'tilewise[web]'\n"


def test_main_reraises_any_other_import_error(monkeypatch):
    _command_raising(monkeypatch, ImportError("cannot import name 'predict' from 'tilewise.model'"))
    with pytest.raises(ImportError, match="predict"):
        cli.main(["gpus"])
