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
    assert g["problems"] >= 100 and g["configs_measured"] > 5000
    assert g["error_median"] <= 0.10  # target met
    # figures on the GEMM re-sweep of the gemm branch (session 4) with the calibration regenerated from it
    assert g["error_p90"] <= 0.25  # target 0.25: met, 0.210 measured (0.355 on the first sweep)
    assert g["top1_within_5pct"] >= 0.85  # target 0.90: missed, 0.876 measured (0.70 on the first sweep)
    # the advisor beats both alternatives on both counts
    assert g["top1_within_5pct"] > 2 * g["hand"]["top1_within_5pct"]  # 88% against 28%
    assert g["top1_within_5pct"] > 3 * g["nmh"]["top1_within_5pct"]  # against 24% (nmh's tiles on the fixed kernel)
    assert g["error_median"] < g["nmh"]["error_median"] / 5 and g["error_median"] < g["hand"]["error_median"] / 5
    assert g["nmh"]["error_median"] > 0.35  # the "median error ~80%"-class anchor: 41% here
    assert g["autotune_device_s"] > 1000 and g["advisor_device_s"] == 0
    c = g["vs_cublas"]
    assert 0.95 <= c["advisor_median"] <= c["kernel_best_median"] < 1.0  # missed: 0.970, the kernel's best 0.978
    assert c["kernel_best_below_0.8"] >= 5  # 8 held-out shapes no config of this kernel brings to 0.8x cuBLAS


@pytest.mark.parametrize(
    "fam, top1, med, p90",
    [("attention", 0.76, 0.10, 0.47), ("decode", 0.66, 0.11, 0.30), ("grouped", 0.66, 0.06, 0.15)],
)
def test_other_families(verdict, fam, top1, med, p90):
    f = verdict[fam]
    assert f["top1_within_5pct"] >= top1 and f["error_median"] <= med and f["error_p90"] <= p90
    assert f["error_median"] < f["hand"]["error_median"]  # the model beats the roofline floor as a prediction


def test_every_top1_was_measured(verdict):
    """The advisor's choice is always one of the timed configs (never a config outside the space)."""
    for fam, f in verdict.items():
        for row in f["per_problem"]:
            assert row["advisor_ms"] > 0 and row["ratio"] >= 1.0, (fam, row["key"])
