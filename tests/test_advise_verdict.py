"""The verdict's figures on the committed H200 sweep (held-out split), as docs/advise.md states them.

Each figure is recomputed from the fixtures and the calibration file; the bounds are the targets where
they are met and the measured value (rounded against us) where they are missed, so a regression fails.
"""

from __future__ import annotations

import pytest

from tilewise.advise import fixtures, validate


@pytest.fixture(scope="module")
def verdict():
    return validate.verdict()["families"]


def test_split_is_held_out(verdict):
    for fam in fixtures.FAMILIES:
        keys = set(fixtures.load(fam))
        val = {k for k in keys if validate.split_of(k) == "val"}
        assert verdict[fam]["problems"] == len(val) and len(val) >= 0.6 * len(keys)
        assert not val & validate.CAL_SHAPES


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
    [("attention", 0.85, 0.05, 0.17), ("decode", 0.84, 0.08, 0.20), ("grouped", 0.90, 0.04, 0.15)],
)
def test_other_families(verdict, fam, top1, med, p90):
    """Measured: attention 87% / 4.8% / 16.1%, decode 86% / 7.4% / 19.1%, grouped 91% / 3.7% / 13.8%."""
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
        for row in f["per_problem"]:
            assert row["advisor_ms"] > 0 and row["ratio"] >= 1.0, (fam, row["key"])
