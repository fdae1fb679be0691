"""benchmarks/suites/quoted.sh (the final re-measurement of every quoted results file) on the CPU: its
commands parse with the parsers of the scripts they call, its limits fit the 200 s budget, and each run
writes the file its header says it backs."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUOTED = ROOT / "benchmarks" / "suites" / "quoted.sh"


def _dry_run(out: str) -> list[tuple[str, int, list[str]]]:
    r = subprocess.run(["bash", str(QUOTED), "--dry-run", out], capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    runs = []
    for line in r.stdout.splitlines():
        m = re.match(r"(\w+) \(limit (\d+)s\): (.*)", line)
        assert m, line
        runs.append((m[1], int(m[2]), shlex.split(m[3])))
    return runs


def _script_parser(path: Path):
    spec = importlib.util.spec_from_file_location("_quoted_" + path.stem, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_parser()


def test_limits_fit_the_budget_and_every_run_writes_its_file(tmp_path):
    out = str(tmp_path / "quoted_out")
    runs = _dry_run(out)
    # half of one device call (600 s): the GPU suite and the other sweeps share the call
    total = sum(limit for _, limit, _ in runs)
    assert len(runs) >= 10 and total <= 300
    header = QUOTED.read_text()
    assert f"Limits add up to {total} s" in header  # the header says the sum it has
    for name, _, argv in runs:
        written = [a for a in argv if a.startswith(out)]
        if argv[0] == "bash":
            written = [f"{out}/{Path(argv[1]).stem}.json"]  # checked in the next test
        assert written, f"{name} writes nothing under OUT_DIR"
        row = re.search(rf"^# {name}\s+(\S+)", header, re.MULTILINE)
        assert row, f"{name} is not in the header's list of what each run backs"
        target = row[1]
        assert any(w.endswith(target) or w == out for w in written), (name, target, written)


def test_every_command_parses_with_its_script(tmp_path):
    from tilewise.cli import build_parser

    for name, _, argv in _dry_run(str(tmp_path / "quoted_out")):
        if argv[0] == "bash":  # a suite script: its one `${TILEWISE:-tilewise} bench ...` line, OUT substituted
            script = ROOT / argv[1]
            lines = [ln for ln in script.read_text().splitlines() if ln.startswith("${TILEWISE:-tilewise} ")]
            assert len(lines) == 1, f"{script.name}: one tilewise command expected"
            args = shlex.split(lines[0].split(" ", 1)[1].replace("$OUT", argv[2]))
            build_parser().parse_args(args)  # raises SystemExit(2) on an unknown or malformed option
            written = [a for a in args if a.startswith(argv[2])]
            assert written == [f"{argv[2]}/{name}.json"], (name, written)
        else:
            assert argv[0] == "python3"
            script = ROOT / argv[1]
            assert script.is_file(), f"{name}: {argv[1]} does not exist"
            _script_parser(script).parse_args(argv[2:])


def test_usage_and_refusal():
    r = subprocess.run(["bash", str(QUOTED), "--help"], capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert r.returncode == 0 and "TILEWISE_COMMIT" in r.stdout
    r = subprocess.run(["bash", str(QUOTED)], capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert r.returncode == 2  # no OUT_DIR: the usage, not a run


def test_ncu_csv_parses_to_one_row_per_launch():
    path = ROOT / "benchmarks" / "probes" / "ncu_designs.py"
    import sys

    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location("_ncu_designs", path)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(path.parent))
    head = '"ID","Kernel Name","Block Size","Grid Size","Metric Name","Metric Unit","Metric Value"'
    lines = ["==PROF== Connected to process 1", head]
    for i, tc in enumerate(("39.5", "48.1", "71.2")):
        lines.append(
            f'"{i}","_fa3_fwd_kernel(int)","(384, 1, 1)","(132, 1, 1)","gpu__time_duration.sum","ns","2,850,496"'
        )
        lines.append(
            f'"{i}","_fa3_fwd_kernel(int)","(384, 1, 1)","(132, 1, 1)",'
            f'"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed","%","{tc}"'
        )
    rows = mod.parse_csv("\n".join(lines), ["serial", "ring", "pingpong"])
    assert [r["design_name"] for r in rows] == ["serial", "ring", "pingpong"]
    assert rows[0]["gpu__time_duration.sum"] == 2850496.0 and rows[0]["kernel"] == "_fa3_fwd_kernel"
    key = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
    assert [r[key] for r in rows] == [39.5, 48.1, 71.2]
    assert all(m in " ".join(mod.ncu_command()) for m in mod.METRICS)


def test_compile_sm90_refuses_another_triton_in_one_line(tmp_path):
    triton = pytest.importorskip("triton")
    if triton.__version__.startswith("3.6."):
        pytest.skip("triton 3.6 is installed: the script would compile")
    r = subprocess.run(
        [sys.executable, "benchmarks/sweeps/compile_sm90.py", "--out", str(tmp_path / "x.json")],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert r.returncode == 2 and "needs triton 3.6" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_only_runs_the_named_runs(tmp_path):
    """ONLY="decode attention" keeps those runs, in the suite's order, with their own limits and commands; a name
    that is no run is refused in one line naming the runs (exit 2), before anything runs."""
    every = {name: (limit, argv) for name, limit, argv in _dry_run(str(tmp_path / "all"))}
    env = {"PATH": "/usr/bin:/bin", "ONLY": "attention decode"}
    r = subprocess.run(["bash", str(QUOTED), "--dry-run", str(tmp_path / "all")], capture_output=True, text=True,
                       timeout=30, cwd=ROOT, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    names = [re.match(r"(\w+) \(limit (\d+)s\)", line)[1] for line in r.stdout.splitlines()]
    assert names == ["decode", "attention"]
    assert all(name in every for name in names)
    assert set(every) == set(re.search(r'RUNS="([^"]*)"', QUOTED.read_text())[1].split())  # the list ONLY checks
    env["ONLY"] = "decode no_such_run"
    r = subprocess.run(["bash", str(QUOTED), "--dry-run", str(tmp_path / "all")], capture_output=True, text=True,
                       timeout=30, cwd=ROOT, env=env)  # fmt: skip
    assert r.returncode == 2 and r.stdout == ""
    assert "ONLY must name runs among" in r.stderr and "got 'no_such_run'" in r.stderr
