"""The benchmark harness, the gemm/sum suites' argument parsing and the roofline plot (no GPU needed)."""

from __future__ import annotations

import argparse
import inspect
import json
import subprocess
import sys

import pytest

from tilewise.bench import harness
from tilewise.bench.suites import gemm as gemm_suite
from tilewise.bench.suites import sum as sum_suite
from tilewise.errors import InputError
from tilewise.model import roofline, traffic

TAGS = {
    "gpu": "NVIDIA H200",
    "date": "2026-11-30",
    "torch": "2.11.0",
    "triton": "3.6.0",
    "command": "tilewise bench gemm",
}


def _row(m=64, n=24576, k=8192, ours=0.1, peer=0.105):
    return harness.make_row(
        kernel="matmul",
        shape=f"{m}x{n}x{k}",
        dtype="bf16",
        peer="torch.matmul (cuBLAS)",
        ours_ms=ours,
        peer_ms=peer,
        flops=traffic.gemm_flops(m, n, k),
        nbytes=traffic.gemm_bytes(m, n, k, "bf16"),
        tags=TAGS,
    )


def test_make_row_has_every_key_and_consistent_rates():
    r = _row()
    assert set(harness.ROW_KEYS) <= set(r)
    assert r["speedup"] == pytest.approx(0.105 / 0.1)
    assert r["tflops"] == pytest.approx(2 * 64 * 24576 * 8192 / 1e-4 / 1e12)
    assert r["tbps"] == pytest.approx(traffic.gemm_bytes(64, 24576, 8192) / 1e-4 / 1e12)
    pred = roofline.time("h200", traffic.gemm_flops(64, 24576, 8192), traffic.gemm_bytes(64, 24576, 8192), "bf16")
    assert r["predicted_ms"] == pytest.approx(pred.time_s * 1e3)
    assert r["roofline_fraction"] == pytest.approx(pred.time_s * 1e3 / 0.1)
    assert r["model_gpu"] == "h200" and r["predicted_bound"] == "memory"


def test_write_read_rows_round_trip(tmp_path):
    rows = [_row(), _row(8192, 8192, 8192, 1.7, 1.6)]
    p = tmp_path / "sub" / "gemm.json"
    harness.write_rows(str(p), rows, meta=TAGS)
    assert harness.read_rows(str(p)) == json.loads(json.dumps(rows))
    assert json.loads(p.read_text())["meta"]["gpu"] == "NVIDIA H200"
    table = harness.format_table(rows)
    assert "64x24576x8192" in table and table.count("\n") == 3
    md = harness.markdown_table(rows)
    assert md.splitlines()[1].startswith("|---|") and md.count("\n") == 3


def test_env_tags_and_registry_key():
    tags = harness.env_tags("tilewise bench sum")
    assert {"date", "command", "torch", "triton", "gpu", "cpu"} <= set(tags)
    assert isinstance(tags["cpu"], str) and tags["cpu"]
    assert tags["command"] == "tilewise bench sum"
    assert harness.registry_key_for("NVIDIA H200") == "h200"
    assert harness.registry_key_for("NVIDIA H100 PCIe") == "h100-pcie"


def test_time_pair_needs_no_gpu_to_import():
    # importing the harness (and so the CLI's bench command) must not pull in torch or touch CUDA
    code = (
        "import sys, tilewise.bench.harness as h; h.time_pair; print('torch' in sys.modules, 'triton' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
    params = inspect.signature(harness.time_pair).parameters
    assert list(params)[:2] == ["ours", "peer"] and params["rounds"].default >= 3


def test_gemm_parse_shapes():
    assert gemm_suite.parse_shapes("64x24576x8192, 3000×5000×700") == [(64, 24576, 8192), (3000, 5000, 700)]
    assert gemm_suite.parse_shapes("targets") == gemm_suite.TARGETS
    assert len(gemm_suite.parse_shapes("all")) >= 30 + len(gemm_suite.TARGETS) - 7
    assert len(gemm_suite.parse_shapes("sweep") + gemm_suite.TARGETS) >= 30
    for bad, match in [
        ("64x24576", "MxNxK"),
        ("axbxc", "integers"),
        ("0x5x5", "M must be an integer >= 1"),
        ("", "expected"),
    ]:
        with pytest.raises(InputError, match=match):
            gemm_suite.parse_shapes(bad)


def test_sweep_has_the_issue_shapes():
    shapes = set(gemm_suite.parse_shapes("all"))
    for s in [(8192, 8192, 8192), (64, 24576, 8192), (3000, 5000, 700), (48, 11008, 4096)]:
        assert s in shapes
    for m in (1, 16, 128, 256, 1024):
        assert (m, 24576, 8192) in shapes


def test_rotation_covers_three_l2s():
    l2 = 60 * 2**20
    assert gemm_suite.rotation(2 * 2**30, l2) == 1  # 1 GiB-class inputs stream from HBM anyway
    r = gemm_suite.rotation(50 * 2**20, l2)
    assert r * 50 * 2**20 >= 3 * l2 and r <= 64
    assert gemm_suite.rotation(2**20, l2) == 64  # capped


def test_sum_parse_cases():
    assert sum_suite.parse_cases("1G,64M:rows") == [(2**30, None), (64 * 2**20, "rows")]
    with pytest.raises(InputError, match="rows' or 'cols"):
        sum_suite.parse_cases("1G:diag")


def test_suites_register_with_the_cli():
    from tilewise.bench import cli

    suites = cli._suites()
    assert {"gemm", "sum"} <= set(suites)
    p = argparse.ArgumentParser()
    gemm_suite.add_arguments(p)
    a = p.parse_args(["--shapes", "targets", "--dtype", "fp16"])
    assert a.shapes == "targets" and a.dtype == "fp16"


def test_roofline_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    from tilewise.bench.plot import roofline_plot

    sum_row = harness.make_row(
        kernel="sum",
        shape="268435456",
        dtype="fp32",
        peer="torch.sum",
        ours_ms=0.26,
        peer_ms=0.26,
        flops=traffic.sum_flops(2**28),
        nbytes=traffic.sum_bytes(2**28, "fp32"),
        tags=TAGS,
        model_dtype="fp32",
    )
    out = roofline_plot([_row(), _row(8192, 8192, 8192, 1.7, 1.6), sum_row], str(tmp_path / "roofline.png"))
    data = (tmp_path / "roofline.png").read_bytes()
    assert out.endswith(".png") and data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_timing_fields_graph_columns():
    t = {
        "ours_ms": 0.19, "peer_ms": 0.08, "ours_p20_ms": 0.18, "ours_p80_ms": 0.2, "peer_p20_ms": 0.07,
        "peer_p80_ms": 0.09, "ours_graph_ms": 0.07, "peer_graph_ms": 0.075, "ours_graph_p20_ms": 0.069,
    }  # fmt: skip
    f = harness.timing_fields(t)
    assert "ours_ms" not in f and "peer_ms" not in f  # those are make_row's own arguments
    assert f["ours_p20_ms"] == 0.18 and f["ours_graph_ms"] == 0.07 and f["ours_graph_p20_ms"] == 0.069
    assert f["ours_host_ms"] == pytest.approx(0.12) and f["peer_host_ms"] == pytest.approx(0.005)
    assert f["speedup_graph"] == pytest.approx(0.075 / 0.07)
    # eager only: no graph fields invented
    f = harness.timing_fields({k: v for k, v in t.items() if "graph" not in k})
    assert not any("graph" in k or "host" in k for k in f)
    # one side not capturable: the note travels, no speedup
    f = harness.timing_fields(
        {"ours_ms": 1.0, "peer_ms": 2.0, "ours_graph_ms": 0.9, "graph_note": "peer: not capturable"}
    )
    assert f["graph_note"].startswith("peer") and "speedup_graph" not in f and f["ours_host_ms"] == pytest.approx(0.1)


def test_format_table_shows_graph_columns_when_measured():
    r = _row()
    assert "ours_graph_ms" not in harness.format_table([r])
    r.update(harness.timing_fields({"ours_ms": 0.1, "peer_ms": 0.105, "ours_graph_ms": 0.09, "peer_graph_ms": 0.1}))
    head = harness.format_table([r]).splitlines()[0]
    assert "ours_graph_ms" in head and "speedup_graph" in head


def test_cli_has_cuda_graph_option(capsys):
    from tilewise.cli import main

    with pytest.raises(SystemExit):
        main(["bench", "decode", "--help"])
    assert "--cuda-graph" in capsys.readouterr().out
