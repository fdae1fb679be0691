"""Every data file under src/tilewise ships in the wheel: pyproject's package-data globs cover it.

The time model reads model/calibration/<gpu>.json and the advisor's tests advise/sm90_gemm_compiled.json;
a file the globs miss is absent from an installed package (setuptools copies only .py files and the
listed data), and the library then runs without it.
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "src" / "tilewise"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")
def test_package_data_globs_cover_every_data_file():
    import tomllib

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["tilewise"]
    shipped = {p for g in globs for p in PKG.glob(g) if p.is_file()}
    data = {
        p for p in PKG.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    }
    assert (PKG / "model" / "calibration" / "h200.json") in data
    missing = sorted(os.path.relpath(p, PKG) for p in data - shipped)
    assert missing == []
