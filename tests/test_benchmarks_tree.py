"""Every committed results file names its GPU, date, versions and command, and has a script that makes it again."""

import json
import shlex
from pathlib import Path

import pytest

from tilewise import cli

ROOT = Path(__file__).resolve().parent.parent
RESULTS = sorted((ROOT / "benchmarks" / "results").glob("*/*.json"))
SUITE_SCRIPTS = sorted((ROOT / "benchmarks" / "suites").glob("*.sh"))
TAGS = ("gpu", "date", "torch", "triton", "command")


CLI = ("tilewise bench ", "${TILEWISE:-tilewise} bench ")  # the installed CLI, or the one TILEWISE names


def _bench_line(script: Path) -> list[str]:
    """The script's one `tilewise bench` command, its output folder at the default (results/h200)."""
    lines = [line for line in script.read_text().splitlines() if line.startswith(CLI)]
    assert len(lines) == 1, f"{script.name}: expected one `tilewise bench` line, got {len(lines)}"
    return shlex.split(lines[0].replace("$OUT", "benchmarks/results/h200"))[1:]


def test_there_are_results():
    assert len(RESULTS) >= 20


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_results_are_tagged_and_reproducible(path):
    data = json.loads(path.read_text())
    meta = data["meta"]
    missing = [t for t in TAGS if not meta.get(t)]
    assert not missing, f"{path.name}: meta lacks {missing}"
    for row in data.get("rows", []):
        assert all(row.get(t) for t in TAGS), f"{path.name}: a row lacks one of {TAGS}: {row.get('shape')}"
    suite_script = ROOT / "benchmarks" / "suites" / (path.stem + ".sh")
    if suite_script.exists():
        argv = _bench_line(suite_script)
        assert argv[argv.index("--json") + 1] == str(path.relative_to(ROOT)), suite_script.name
    else:
        reproduce = meta.get("reproduce", "")
        words = shlex.split(reproduce)
        while words and "=" in words[0] and words[0].split("=")[0].isupper():  # TESTS=0 bash ...: an env prefix
            words = words[1:]
        # a Python script, or the device shell script that ran several (ncu wraps a Python run)
        assert words[:1] in (["python"], ["bash"]) and (ROOT / words[1]).is_file(), (
            f"{path.name}: no benchmarks/suites/{path.stem}.sh and meta.reproduce names no script ({reproduce!r})"
        )
        assert str(path.relative_to(ROOT)) in reproduce


@pytest.mark.parametrize("script", SUITE_SCRIPTS, ids=lambda p: p.name)
def test_suite_scripts_are_valid_commands(script):
    """The command parses with today's CLI and passes the suite's own argument checks (no GPU needed)."""
    text = script.read_text()
    if not any(c in text for c in CLI):  # the roofline plot drawn from committed rows; quoted.sh runs the others
        return
    argv = _bench_line(script)
    args = cli.build_parser().parse_args(argv)
    from tilewise.bench import cli as bench_cli

    bench_cli._suites()[args.suite].check(args)


def test_no_run_records_in_the_tree():
    assert not (ROOT / "benchmarks" / "gpu").exists()
    assert not (ROOT / "docs" / "notes").exists() and not (ROOT / "docs" / "TEAM.md").exists()
