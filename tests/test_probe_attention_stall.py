"""benchmarks/probes/attention_stall_ncu.py without a GPU: the --csv summary and its refusal of a missing file."""

from __future__ import annotations

import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "..", "benchmarks", "probes", "attention_stall_ncu.py")


def _probe():
    spec = importlib.util.spec_from_file_location("attention_stall_ncu", PROBE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _sass_csv(path, rows):
    head = '"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)"'
    lines = ['"Kernel Name","_fa3_fwd_kernel",', head]
    lines += [f'"0x{i:x}","{src}","{n}","0"' for i, (src, n) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")


def test_csv_summary_groups_samples_by_instruction_kind(tmp_path):
    mod = _probe()
    rows = [("STG.E desc[UR4][R2.64], R3", 30), ("@!P3  BRA 0x10", 50), ("MUFU.EX2 R1, R2", 20)]
    for seq in mod.SHAPES:
        _sass_csv(tmp_path / f"s{seq}_source.csv", rows)
    out = tmp_path / "out.json"
    assert mod.main(["--csv", str(tmp_path), "--out", str(out)]) == 0
    s = json.loads(out.read_text())["S512"]
    assert s["samples"] == 100 and s["instructions"] == 3
    assert s["by_kind"] == {"branch": 0.5, "global store": 0.3, "exp2 / reciprocal (MUFU)": 0.2}
    assert s["top"][0]["sass"].startswith("@!P3") and s["top"][0]["share"] == 0.5


def test_csv_without_the_profile_is_one_line_exit_2(tmp_path, capsys):
    mod = _probe()
    assert mod.main(["--csv", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "expected" in err and "s512_source.csv" in err and "not found" in err and "\n" not in err
