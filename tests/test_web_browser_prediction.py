"""The explorer page shows the time model beside the measured H200 GEMM row and the decode point (a real
headless Chromium; the fixture and helpers of tests/test_web_browser.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api")
from test_web_browser import fresh_page, page, text  # noqa: E402, F401  (page: that module's browser fixture)

from tilewise.web import api  # noqa: E402


def test_hierarchy_and_decode_show_the_time_model(page):  # noqa: F811
    pg = fresh_page(page, "?gpu=h200")
    (m,) = api.call("hierarchy", {"gpu": "h200"})["measured"]
    assert (
        text(pg, "hier-measured-ms-model") == f"{m['model_ms'] * 1e3:.1f} µs (time model, {m['model_binding']} binds)"
    )
    assert text(pg, "hier-measured-floor-model") == f"{m['floor_ms'] * 1e3:.1f} µs (roofline, {m['floor_bound']}-bound)"
    d = api.call("decode", {"gpu": "h200", "batch": "1"})
    p = d["predicted"]
    assert text(pg, "dec-model") == f"{p['model_ms'] * 1e3:.1f} µs ({p['model_binding']})"
    assert text(pg, "dec-floor") == f"{d['current']['time_s'] * 1e6:.1f} µs"
    pg.close()
