"""The README's quick start is real output: its Python examples run, and its CLI excerpts are what the CLI prints."""

import doctest
import re
from pathlib import Path

import pytest

from tilewise import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, re.S)


def _runs(argv: list[str], capsys) -> str:
    assert cli.main(argv) == 0
    return capsys.readouterr().out


def test_python_examples_run():
    examples = [body for lang, body in BLOCKS if lang == "python" and ">>>" in body]
    assert examples, "the README lost its Python examples"
    for body in examples:
        test = doctest.DocTestParser().get_doctest(body, {}, "README", "README.md", 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        runner.run(test)
        assert runner.failures == 0, body


def _excerpts() -> list[tuple[list[str], list[str]]]:
    """(argv, lines shown) for every '$ tilewise ...' in a plain code block; '...' lines are elisions."""
    out = []
    for lang, body in BLOCKS:
        if lang:
            continue
        current: tuple[list[str], list[str]] | None = None
        for line in body.splitlines():
            if line.startswith("$ tilewise "):
                current = (line[len("$ tilewise ") :].split(), [])
                out.append(current)
            elif current is not None and line.strip() and line.strip() != "...":
                current[1].append(line.rstrip())
    return out


@pytest.mark.parametrize("argv, lines", _excerpts(), ids=[" ".join(argv) for argv, _ in _excerpts()])
def test_cli_excerpts_are_what_the_cli_prints(argv, lines, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the excerpts name example files relative to the repository
    printed = _runs(argv, capsys)
    assert lines, argv
    missing = [line for line in lines if line.strip() not in printed]
    assert not missing, f"tilewise {' '.join(argv)} no longer prints: {missing}"
