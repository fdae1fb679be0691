"""The command line: help, occupancy report and plot, error handling."""

import json
import subprocess
import sys

from tilewise.cli import main


def test_help_lists_commands(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    for cmd in ("explain", "gpus", "occupancy"):
        assert cmd in out


def test_occupancy_report(capsys):
    assert main(["occupancy", "--gpu", "h100-sxm", "--threads", "256", "--registers", "64", "--smem", "48K"]) == 0
    out = capsys.readouterr().out
    assert "blocks per SM: 4" in out and "binding" in out and "what if block size varies" in out
    assert main(["occupancy", "--threads", "256", "--registers", "64", "--smem", "48K", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["blocks_per_sm"] == 4 and set(d["limiters"]) == {"registers", "shared_memory"}
    assert len(d["what_if"]["threads"]) == 32 and d["what_if"]["threads"][0]["threads"] == 32


def test_occupancy_plot(tmp_path, capsys):
    path = tmp_path / "occ.png"
    assert main(["occupancy", "--threads", "128", "--registers", "32", "--plot", str(path)]) == 0
    assert path.stat().st_size > 10_000


def test_occupancy_errors(capsys):
    cases = [
        (["--threads", "2048", "--registers", "32"], "threads must be an integer <= 1024, got 2048"),
        (["--threads", "128", "--registers", "256"], "registers must be an integer <= 255, got 256"),
        (["--threads", "128", "--registers", "32", "--smem", "300K"], "--smem must be at most the per-block limit"),
        (["--threads", "128", "--registers", "32", "--smem", "lots"], "--smem must be a size in bytes"),
        (["--threads", "128", "--registers", "32", "--gpu", "v100"], "unknown GPU 'v100'"),
    ]
    for argv, needle in cases:
        assert main(["occupancy", *argv]) == 2
        err = capsys.readouterr().err
        assert needle in err and "Traceback" not in err, (argv, err)


def test_entry_point_runs_in_a_fresh_process():
    res = subprocess.run([sys.executable, "-m", "tilewise.cli", "explain", "--json"], capture_output=True, text=True)
    assert res.returncode == 0 and json.loads(res.stdout)["tiling"]["blocks"] == 192
    res = subprocess.run(
        [sys.executable, "-m", "tilewise.cli", "explain", "gemm", "--k", "0"], capture_output=True, text=True
    )
    assert res.returncode == 2 and res.stderr.strip() == "tilewise: error: --k must be an integer >= 1, got 0"
