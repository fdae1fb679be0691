"""benchmarks/probes/gemm_ncu_peers.py's converter: ncu's CSV (a row per kernel and metric) to one row per run, the
model's prediction beside each Gluon run; a CSV with the wrong number of kernels is refused."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _probe():
    spec = importlib.util.spec_from_file_location("gemm_ncu_peers", ROOT / "benchmarks/probes/gemm_ncu_peers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _csv(path: Path, kernels: int) -> None:
    with path.open("w", newline="") as f:
        f.write("==PROF== Connected to process 1\n")  # ncu's log lines come before the table
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        w.writerow(["ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"])
        for i in range(kernels):
            w.writerow([str(i), f"kern_{i}(int)", "gpu__time_duration.sum", "ns", f"{1000 + i:,}"])
            w.writerow([str(i), f"kern_{i}(int)", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
                        "%", "45.5"])  # fmt: skip


def test_convert_joins_runs_and_predictions(tmp_path):
    from tilewise.model.predict import gemm_gluon

    mod = _probe()
    _csv(tmp_path / "ncu.csv", len(mod.RUNS))
    doc = mod.convert(str(tmp_path / "ncu.csv"), {"gpu": "NVIDIA H200"})
    assert len(doc["rows"]) == len(mod.RUNS)
    for i, (((m, n, k, layout), cfg), r) in enumerate(zip(mod.RUNS, doc["rows"])):
        assert r["kernel"] == f"kern_{i}" and r["gpu__time_duration.sum"] == 1000 + i and r["gpu"] == "NVIDIA H200"
        if cfg is None:
            assert r["shape_config"].endswith(" cublas") and "model_ms" not in r
        else:
            p = gemm_gluon({"m": m, "n": n, "k": k, "dtype": "bf16", "layout": layout}, cfg.as_dict())
            assert r["shape_config"] == f"{m}x{n}x{k}_bf16_{layout} {cfg.tag()}" and r["model_ms"] == p.ms
    assert json.dumps(doc)  # JSON-ready


def test_convert_refuses_a_short_csv(tmp_path):
    mod = _probe()
    _csv(tmp_path / "ncu.csv", len(mod.RUNS) - 1)
    with pytest.raises(SystemExit, match="profiled kernels"):
        mod.convert(str(tmp_path / "ncu.csv"), {})


def test_missing_csv_or_meta_is_one_line_exit_2(tmp_path, capsys):
    mod = _probe()
    assert mod.main(["--csv", str(tmp_path / "absent.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gemm_ncu_peers: --csv expects an existing file") and "\n" not in err
    _csv(tmp_path / "ncu.csv", len(mod.RUNS))
    assert mod.main(["--csv", str(tmp_path / "ncu.csv"), "--meta", str(tmp_path / "absent.json")]) == 2
    assert "--meta expects an existing file" in capsys.readouterr().err
