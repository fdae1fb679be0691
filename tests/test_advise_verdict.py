"""The verdict's figures on the committed H200 sweep (held-out split), as docs/advise.md states them.

Each figure is recomputed from the fixtures and the calibration file; the bounds are the targets where
they are met and the measured value (rounded against us) where they are missed, so a regression fails.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from tilewise.advise import fixtures, validate

# The calibration anchors as docs/advise.md names them (the shapes calibrate.py reads the per-config MMA and
# stream rates on, and three more GEMMs), spelled out here as the spec the library's CAL_SHAPES must equal.
ANCHORS = {
    "8192x8192x8192_bf16_nn", "8192x8192x8192_fp16_nt", "4096x28672x4096_bf16_nt", "1x28672x4096_bf16_nt",
    "64x28672x4096_bf16_nt", "b4h32kv32q4096k4096d64n_bf16", "b4h32kv32q4096k4096d128n_bf16",
    "b2h16kv16q4096k4096d256n_bf16", "b1h32kv8L131072d128_bf16", "e8r4096n8192k8192_bf16", "e128r8n1536k2048_bf16",
}  # fmt: skip


def held_out(key: str) -> bool:
    """The split rule written out: an anchor or one key in four by its SHA-1 is calibration, the rest held out."""
    return key not in ANCHORS and int(hashlib.sha1(key.encode()).hexdigest(), 16) % 4 != 0


@pytest.fixture(scope="module")
def verdict():
    return validate.verdict()["families"]


def test_split_is_held_out(verdict):
    for fam in fixtures.FAMILIES:
        keys = set(fixtures.load(fam))
        val = {k for k in keys if held_out(k)}
        assert {k for k in keys if validate.split_of(k) == "val"} == val
        assert {row["key"] for row in verdict[fam]["per_problem"]} == val
        assert verdict[fam]["problems"] == len(val) and len(val) >= 0.6 * len(keys)
    assert set(validate.CAL_SHAPES) == ANCHORS


def test_fresh_set_is_disjoint_from_the_sweep():
    """The fresh held-out set was drawn at random (seeded): none of its problems is one the calibration read."""
    fresh = os.path.join(fixtures.DEFAULT_DIR, "fresh")
    for fam in fixtures.FAMILIES:
        assert not set(fixtures.load(fam, fresh)) & set(fixtures.load(fam))


def test_gemm_figures(verdict):
    g = verdict["gemm"]
    assert g["problems"] >= 100 and g["configs_measured"] > 6000
    assert g["error_median"] <= 0.055  # target 0.10: met, 0.052 measured
    assert g["error_p90"] <= 0.21  # target 0.25: met, 0.192 measured
    assert g["top1_within_5pct"] >= 0.81  # target 0.90: missed, 0.83 measured (87 of 105)
    # the advisor beats both alternatives on both counts
    assert g["top1_within_5pct"] > 2.5 * g["hand"]["top1_within_5pct"]  # 83% against the first hand rule's 28%
    # and against the kernel's default when the re-sweep ran (the previous calibration's top-1): 83% against 61%
    d = g["default_at_sweep"]
    assert g["top1_within_5pct"] > d["top1_within_5pct"] + 0.15 and d["advisor_speedup_geomean"] > 1.01  # 1.027x
    assert g["top1_within_5pct"] > 3 * g["nmh"]["top1_within_5pct"]  # against 24%
    assert g["error_median"] < g["nmh"]["error_median"] / 5 and g["error_median"] < g["hand"]["error_median"] / 5
    assert g["nmh"]["error_median"] > 0.35  # an untuned heuristic's error class: 44% here
    assert g["autotune_device_s"] > 1000 and g["advisor_device_s"] == 0
    c = g["vs_cublas"]
    assert 0.95 <= c["advisor_median"] <= c["kernel_best_median"] < 1.0  # missed: 0.97x, the kernel's best 0.98x
    assert c["kernel_best_below_0.8"] >= 6  # shapes no config of this kernel brings to 0.8x cuBLAS (8 measured)


def test_defaults_against_cublas_over_every_problem(verdict):
    """The defaults are the advisor's top-1: read from the sweep (which times every config and cuBLAS) for all
    152 problems, both splits."""
    c = validate.verdict(families=("gemm",))["gemm_defaults_vs_cublas_all"]
    assert c["problems"] >= 150
    assert 0.95 <= c["advisor_median"] <= c["kernel_best_median"] < 1.0  # 0.97x and 0.98x measured
    assert c["advisor_below_0.8"] <= 22 and c["kernel_best_below_0.8"] >= 8  # 20 and 11 measured


@pytest.mark.parametrize(
    "fam, top1, med, p90",
    [("attention", 0.85, 0.05, 0.17), ("decode", 0.95, 0.041, 0.135), ("grouped", 0.90, 0.04, 0.15)],
)
def test_other_families(verdict, fam, top1, med, p90):
    """Measured: attention 87% / 4.8% / 16.1%, decode 95% / 4.0% / 13.5% (86% / 6.0% / 15.5% before its
    per-generation terms), grouped 91% / 3.7% / 13.8%."""
    f = verdict[fam]
    assert f["top1_within_5pct"] >= top1 and f["error_median"] <= med and f["error_p90"] <= p90
    assert f["error_median"] < f["hand"]["error_median"]  # the model beats the roofline floor as a prediction


def test_calibration_split_figures_beside_the_verdict(verdict):
    """The in-sample figures are printed beside the held-out ones; held-out is not much worse than in-sample
    (the per-config rates do not just memorise the calibration problems)."""
    for fam, f in verdict.items():
        c = f["calibration_split"]
        assert c["split"] == "cal" and c["problems"] >= 7
        assert f["error_median"] < 2 * c["error_median"] + 0.03, fam
        assert f["error_p90"] < 2.5 * c["error_p90"] + 0.05, fam


def test_every_top1_was_measured(verdict):
    """The advisor's choice is always one of the timed configs (never a config outside the space)."""
    for fam, f in verdict.items():
        # the fixture read independently of fixtures.load: the fastest timed config of each problem
        best: dict = {}
        with open(os.path.join(fixtures.DEFAULT_DIR, f"{fam}.jsonl")) as fh:
            for line in fh:
                r = json.loads(line)
                if r.get("source", "space") == "space" and isinstance(r.get("ms"), (int, float)):
                    best[r["key"]] = min(best.get(r["key"], float("inf")), r["ms"])
        for row in f["per_problem"]:
            assert row["best_ms"] == best[row["key"]], (fam, row["key"])
            assert row["ratio"] == pytest.approx(row["advisor_ms"] / best[row["key"]]), (fam, row["key"])


def test_fresh_set_figures():
    """The advisor on the fresh held-out set (random problems, seed recorded, swept after the calibration): the
    figures docs/advise.md states, bounded by the measured values rounded against us. GEMM misses its targets
    (top-1 within 5% on 8 of 16, median error 33%, p90 81%): 15 of its 16 problems have operand rows that are
    not 16-byte aligned and too small to copy to padded rows, which the sweep's calibration problems almost
    never are; the narrow-load term (predict._gemm_narrow_loads) took it from 7 of 16, 45%, 89%."""
    fr = validate.verdict()["fresh"]
    assert fr["seed"] == 20261201
    f = fr["families"]
    assert f["gemm"]["problems"] == 16 and f["gemm"]["top1_within_5pct"] >= 0.5 and f["gemm"]["error_median"] <= 0.34
    assert f["gemm"]["error_p90"] <= 0.81
    assert f["gemm"]["nmh"]["top1_within_5pct"] >= 0.68  # nvidia-matmul-heuristics: 11 of 16, ahead of the advisor
    for fam, top1, med, p90 in (("attention", 0.75, 0.074, 0.176), ("decode", 1.0, 0.059, 0.203),
                                ("grouped", 0.5, 0.065, 0.24)):  # fmt: skip
        assert f[fam]["problems"] == 4
        assert f[fam]["top1_within_5pct"] >= top1 and f[fam]["error_median"] <= med and f[fam]["error_p90"] <= p90


def test_validate_without_fixtures_is_one_line(tmp_path, capsys):
    from tilewise.cli import main

    assert main(["advise", "--validate", "--sweep", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "pass --sweep DIR" in err
