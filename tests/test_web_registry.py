"""The panel registry: one module per panel, every panel listed, a broken import fails loudly."""

import subprocess
import sys
import textwrap
from pathlib import Path

from tilewise.web import api, registry

SRC = Path(__file__).resolve().parents[1] / "src"
PANEL_DIR = SRC / "tilewise" / "web" / "panels"


def test_every_panel_module_registers_one_panel_in_page_order():
    modules = sorted(p.stem for p in PANEL_DIR.glob("*.py") if p.stem != "__init__")
    assert sorted(api.PANELS) == modules  # one module per panel, each registered under its own name
    assert [p.id for p in api.available()] == [i for i in registry.ORDER if i in api.PANELS]
    for p in api.available():
        assert p.func.__module__ == f"tilewise.web.panels.{p.id}"


def test_no_probing_in_the_web_package():
    for path in (SRC / "tilewise" / "web").rglob("*.py"):
        text = path.read_text()
        assert "except Exception" not in text, path
        assert "import_module" not in text, path  # no optional-module probing


def test_a_broken_model_module_stops_the_explorer_with_its_error():
    """A model module that fails to import is the explorer's error, not a silently missing panel."""
    code = textwrap.dedent(
        """
        import sys, importlib.abc

        class Broken(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "tilewise.model.pipeline":
                    raise SyntaxError("a model module mid-edit")
                return None

        sys.meta_path.insert(0, Broken())
        import tilewise.web.api
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(SRC)})
    assert r.returncode != 0
    assert "SyntaxError: a model module mid-edit" in r.stderr


def test_a_second_registration_or_an_unplaced_panel_is_refused():
    import pytest

    with pytest.raises(ValueError, match="registered twice"):
        registry.panel("occupancy", "again", ())(lambda p: {})
    with pytest.raises(ValueError, match="no place in the page order"):
        registry.panel("nowhere", "x", ())(lambda p: {})
