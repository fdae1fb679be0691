"""End to end in a real headless Chromium: the page loads, sliders move, the numbers shown are the model's.

Playwright drives Debian's /usr/bin/chromium (no downloaded browser) against the explorer served
on a free loopback port. Screenshots of every panel go to test-artifacts/; one is copied to
docs/img/explorer.png for the README.
"""

import os
import shutil
from pathlib import Path

import pytest

from tilewise.model import decode, tensorcore
from tilewise.model.occupancy import occupancy
from tilewise.sim import analyze_access
from tilewise.web import api

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("TILEWISE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    # In CI (CI=true) the Makefile installs Debian's chromium: its absence there is a failure, not a skip.
    if os.environ.get("CI"):
        raise RuntimeError(f"CI=true but chromium is not installed ({CHROMIUM}); `make test` should have installed it")
    pytest.skip(f"chromium is not installed ({CHROMIUM})", allow_module_level=True)
pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
README_IMG = ROOT / "docs" / "img" / "explorer.png"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LIMIT_LABEL = {
    "warps": "warps",
    "registers": "registers",
    "shared_memory": "shared memory",
    "blocks": "blocks",
    "barriers": "barriers",
}


@pytest.fixture(scope="module")
def page():
    from tilewise.web.server import BackgroundServer

    with BackgroundServer() as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 900}, device_scale_factor=1)
        pg = context.new_page()
        pg.set_default_timeout(15_000)
        problems: list[str] = []
        pg.on(
            "console",
            lambda m: problems.append(f"console.{m.type}: {m.text}") if m.type in ("error", "warning") else None,
        )
        pg.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
        # Offline: any request that is not to our own server is a failure.
        requests: list[str] = []
        pg.on("request", lambda r: requests.append(r.url))
        pg.goto(url)
        pg.wait_for_selector("body[data-ready='1']")
        settle(pg)
        pg.problems = problems
        pg.requests = requests
        pg.base_url = url
        yield pg
        context.close()
        browser.close()


def settle(pg, panel: str | None = None):
    # Selector waits only: the page's CSP (script-src 'self') forbids the eval that wait_for_function needs.
    sel = f"#panel-{panel}" if panel else ".panel"
    sync_api.expect(pg.locator(f"{sel}[data-busy='1']")).to_have_count(0, timeout=20_000)


def text(pg, key: str) -> str:
    return pg.locator(f"[data-k='{key}']").first.inner_text().strip()


def move(pg, key: str, presses: list[str], panel: str):
    """Move a slider the way a person does with the keyboard, then wait for the panel to redraw."""
    before = pg.locator(f"#panel-{panel}").get_attribute("data-updates")
    slider = pg.locator(f"input[data-k='{key}']")
    slider.focus()
    for k in presses:
        slider.press(k)
    pg.locator(f"#panel-{panel}[data-busy='0']:not([data-updates='{before}'])").wait_for()
    return int(slider.input_value())


def test_every_available_panel_is_shown(page):
    shown = page.eval_on_selector_all(".panel", "els => els.map(e => e.id.replace('panel-', ''))")
    assert shown == [p.id for p in api.available()]
    assert page.locator(".err:visible").count() == 0
    assert all(u.startswith(page.base_url) for u in page.requests), page.requests


def test_occupancy_sliders_show_the_models_numbers(page):
    settle(page, "occupancy")

    def check():
        threads = int(page.locator("input[data-k='occ-threads']").input_value())
        regs = int(page.locator("input[data-k='occ-registers']").input_value())
        smem_kb = int(page.locator("input[data-k='occ-smem']").input_value())
        o = occupancy("h100-sxm", threads, regs, 0, smem_kb * 1024)
        assert text(page, "occ-blocks") == str(o.blocks_per_sm)
        assert text(page, "occ-warps") == f"{o.warps_per_sm} / {o.max_warps_per_sm}"
        assert text(page, "occ-occupancy") == f"{100 * o.occupancy:.1f}%"
        assert text(page, "occ-limiter") == LIMIT_LABEL[o.limiter]
        assert text(page, "occ-threads-value") == str(threads)
        return o

    o = check()  # the defaults: 256 threads, 64 registers, 48 KB
    assert (o.threads, o.registers, o.blocks_per_sm) == (256, 64, 4)
    assert move(page, "occ-threads", ["ArrowRight", "ArrowRight"], "occupancy") == 320
    check()
    assert move(page, "occ-registers", ["PageUp"] * 3 + ["ArrowRight"] * 5, "occupancy") > 64
    check()
    assert move(page, "occ-smem", ["End"], "occupancy") == 227
    o = check()
    assert o.limits["shared_memory"] == o.blocks_per_sm == 1
    assert move(page, "occ-threads", ["Home"], "occupancy") == 32
    check()


def test_n_slider_shows_the_models_feed(page):
    settle(page, "tensorcore")
    for presses, want_n in (([], 64), (["ArrowRight"] * 8, 128), (["End"], 256), (["Home"], 8)):
        if presses:
            assert move(page, "tc-n", presses, "tensorcore") == want_n
        ss = tensorcore.smem_feed(want_n, "bf16", "SS")
        rs = tensorcore.smem_feed(want_n, "bf16", "RS")
        assert text(page, "tc-n-value") == str(want_n)
        assert text(page, "tc-ratio-ss") == f"{ss.ratio:.2f}"
        assert text(page, "tc-ratio-rs") == f"{rs.ratio:.2f}"
        assert text(page, "tc-compute") == f"{ss.compute_cycles:.0f}"
        assert text(page, "tc-b-cycles") == f"{ss.b_cycles:.0f}"
    # the seed's figures, through the page
    move(page, "tc-n", ["End"], "tensorcore")
    assert text(page, "tc-ratio-ss") == "1.60"


def test_batch_slider_and_waves(page):
    settle(page, "decode")
    b = move(page, "dec-batch", ["ArrowRight"] * 63, "decode")
    assert b == 64
    p = decode.decode_gemm_point(64, 8192, 24576, "bf16", "h100-sxm")
    assert text(page, "dec-fill-mma") == "100.0%"
    assert text(page, "dec-intensity") == f"{p.intensity:,.1f}"
    assert text(page, "dec-bound") == "memory"  # full fragments, still memory-bound
    # the hierarchy animation steps to the tail wave: 60 blocks, 72 SMs idle
    settle(page, "hierarchy")
    assert "Wave 1 of 2: 132 of 132 SMs busy" in text(page, "hier-wave-label")
    page.locator("#panel-hierarchy button", has_text="next wave").click()
    assert text(page, "hier-wave-label") == "Wave 2 of 2: 60 of 132 SMs busy, 72 idle"
    assert text(page, "hier-waves") == "1.45"


def test_tiling_animation_steps(page):
    settle(page, "tiling")
    n_steps = int(page.locator("input[data-k='tile-step']").get_attribute("max")) + 1
    assert n_steps == 80
    slider = page.locator("input[data-k='tile-step']")
    slider.focus()
    slider.press("End")
    assert text(page, "tile-written-c") == "64"  # C written once, element by element
    assert text(page, "tile-total") == "576"


def test_warp_access_pattern_and_expression(page):
    settle(page, "access")
    assert text(page, "acc-main") == "32" and text(page, "acc-second") == "31"  # a tile's column: 32-way conflict

    def change(action):
        before = page.locator("#panel-access").get_attribute("data-updates")
        action()
        page.locator(f"#panel-access[data-busy='0']:not([data-updates='{before}'])").wait_for()

    change(lambda: page.locator("select[data-k='acc-preset']").select_option("padded"))
    assert text(page, "acc-main") == "1" and text(page, "acc-second") == "0"
    change(lambda: page.locator("input[data-k='acc-expr']").fill("lane * 2"))
    want = analyze_access([2 * 4 * lane for lane in range(32)], 4, "shared")
    assert text(page, "acc-main") == str(want["wavefronts"]) and text(page, "acc-second") == str(want["bank_conflicts"])
    change(lambda: page.locator("input[data-k='acc-expr']").fill("lane / 2"))  # a bad expression: the 400's message
    assert "use // for integer division" in page.locator("#panel-access .err").inner_text()
    change(lambda: page.locator("input[data-k='acc-expr']").fill("lane * 32"))
    assert page.locator("#panel-access .err").is_hidden()


def test_every_gpu_of_the_registry(page):
    """Switching the GPU redraws every panel from the model without an error (Hopper-only panels say so)."""
    from tilewise import gpus

    for g in [*gpus.list(), gpus.get("h100-sxm")]:
        page.locator("#gpu").select_option(g.key)
        settle(page)
        errors = page.locator(".panel > .err[role='alert']:visible")
        assert errors.count() == 0, (g.key, errors.all_inner_texts())
        threads, regs, smem_kb = (
            int(page.locator(f"input[data-k='{k}']").input_value())
            for k in ("occ-threads", "occ-registers", "occ-smem")
        )
        o = occupancy(g, threads, regs, 0, smem_kb * 1024)
        assert text(page, "occ-blocks") == str(o.blocks_per_sm), (g.key, threads, regs, smem_kb)
        assert page.locator("#panel-hierarchy svg[aria-label='SMs'] rect").count() == g.sms


def test_screenshots_and_no_console_errors(page):
    """Every panel as it first loads (a fresh page, default inputs), and the README's picture."""
    ARTIFACTS.mkdir(exist_ok=True)
    fresh = page.context.new_page()
    fresh.on(
        "console",
        lambda m: page.problems.append(f"console.{m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    fresh.on("pageerror", lambda e: page.problems.append(f"pageerror: {e}"))
    fresh.set_viewport_size({"width": 1440, "height": 2400})
    fresh.goto(page.base_url)
    fresh.wait_for_selector("body[data-ready='1']")
    settle(fresh)
    for pid in [p.id for p in api.available()]:
        loc = fresh.locator(f"#panel-{pid}")
        loc.scroll_into_view_if_needed()
        loc.screenshot(path=str(ARTIFACTS / f"explorer-{pid}.png"))
        assert (ARTIFACTS / f"explorer-{pid}.png").stat().st_size > 10_000
    fresh.set_viewport_size({"width": 1440, "height": 900})
    fresh.locator("#panel-occupancy").evaluate("el => window.scrollTo({top: el.offsetTop - 16, behavior: 'instant'})")
    fresh.wait_for_timeout(100)
    fresh.screenshot(path=str(ARTIFACTS / "explorer.png"))
    fresh.close()
    README_IMG.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ARTIFACTS / "explorer.png", README_IMG)
    # The bad expression above answered 400, which Chromium logs as a failed resource load; nothing else may appear.
    problems = [p for p in page.problems if "the server responded with a status of 400" not in p]
    assert problems == []
