"""End to end in a real headless Chromium: the page loads, sliders move, the numbers shown are the model's.

Playwright drives a system Chromium (or Debian's, unpacked by scripts/find_browser.sh; never Playwright's
own download) against the explorer served
on a free loopback port. Screenshots of every panel go to test-artifacts/; one is copied to
docs/img/explorer.png for the README.
"""

import os
import shutil
import urllib.parse
from pathlib import Path

import pytest

from tilewise.gpus import DEFAULT_GPU
from tilewise.model import decode, tensorcore, waves
from tilewise.model.occupancy import occupancy
from tilewise.sim import analyze_access
from tilewise.web import api

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = (
    os.environ.get("TILEWISE_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
    or next((str(p) for p in [ROOT / ".venv/chromium/usr/lib/chromium/chromium"] if p.exists()), "")
)
if not CHROMIUM or not Path(CHROMIUM).exists():
    # As root `make test` installs Debian's chromium (scripts/find_browser.sh), so in CI as root its absence
    # is a failure; anywhere else the browser tests skip with this one line.
    if os.environ.get("CI") and hasattr(os, "geteuid") and os.geteuid() == 0:
        raise RuntimeError(
            "CI=true as root but no chromium: `make test` (scripts/find_browser.sh) should have installed it"
        )
    pytest.skip(
        "no Chromium found (TILEWISE_CHROMIUM, chromium on PATH, or .venv/chromium from scripts/find_browser.sh)",
        allow_module_level=True,
    )
pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")
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
        o = occupancy(DEFAULT_GPU, threads, regs, 0, smem_kb * 1024)  # the page opens on the default GPU
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
    # the feed figures (1.00 / 1.33 / 1.60 at N = 64 / 128 / 256), through the page
    move(page, "tc-n", ["End"], "tensorcore")
    assert text(page, "tc-ratio-ss") == "1.60"


def test_batch_slider_and_waves(page):
    settle(page, "decode")
    b = move(page, "dec-batch", ["ArrowRight"] * 63, "decode")
    assert b == 64
    p = decode.decode_gemm_point(64, 8192, 24576, "bf16", DEFAULT_GPU)
    assert text(page, "dec-fill-mma") == "100.0%"
    assert text(page, "dec-intensity") == f"{p.intensity:,.1f}"
    assert text(page, "dec-bound") == "memory"  # full fragments, still memory-bound
    # the hierarchy animation steps to the tail wave: 60 blocks, 72 SMs idle
    settle(page, "hierarchy")
    assert "Wave 1 of 2: 132 of 132 SMs busy" in text(page, "hier-wave-label")
    page.locator("#panel-hierarchy button", has_text="next wave").click()
    assert text(page, "hier-wave-label") == "Wave 2 of 2: 60 of 132 SMs busy, 72 idle"
    assert text(page, "hier-waves") == "1.45"
    # stream-K deals the same 192 x 512 K steps over 132 CTAs of the one row of tiles: 745 steps the busiest
    sk = waves.stream_k_split(1, 192, 512, 132)
    busiest = -(-sk.lane_units // sk.per_lane)
    assert text(page, "hier-sk") == f"{192 * 512 / (132 * busiest) * 100:.1f}%"
    assert f"the busiest runs {busiest} steps" in text(page, "hier-sk-label")
    # the load strips: one bar per SM for the waves and one for the deal
    bars = page.locator("[data-k='hier-sk-fig'] svg[aria-label='SM load'] rect")
    assert bars.count() == 2 * 132


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

    for g in [*gpus.list(), gpus.get(DEFAULT_GPU)]:  # ends back on the default
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
    if os.environ.get("TILEWISE_UPDATE_SCREENSHOT") == "1":  # a test run never rewrites tracked files by itself
        README_IMG.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ARTIFACTS / "explorer.png", README_IMG)
    # The bad expression above answered 400, which Chromium logs as a failed resource load; nothing else may appear.
    problems = [p for p in page.problems if "the server responded with a status of 400" not in p]
    assert problems == []


# ------------------------------------------------------------------ state, measured, exercises, polish


def fresh_page(page, query: str = "", width: int = 1440, height: int = 900):
    pg = page.context.new_page()
    pg.set_default_timeout(15_000)
    pg.on("pageerror", lambda e: page.problems.append(f"pageerror: {e}"))
    pg.set_viewport_size({"width": width, "height": height})
    pg.goto(page.base_url + query)
    pg.wait_for_selector("body[data-ready='1']")
    settle(pg)
    return pg


def wait_url(pg, *parts: str):
    for part in parts:
        pg.locator(f"body[data-url*='{part}']").wait_for()


def test_url_round_trip_back_forward_and_reload(page):
    pg = fresh_page(page)
    move(pg, "occ-threads", ["ArrowRight", "ArrowRight"], "occupancy")  # 320
    wait_url(pg, "occ-threads=320")
    before = pg.locator("#panel-access").get_attribute("data-updates")
    pg.locator("select[data-k='acc-preset']").select_option("padded")
    pg.locator(f"#panel-access[data-busy='0']:not([data-updates='{before}'])").wait_for()
    wait_url(pg, "acc-preset=padded")
    other = "h100-sxm"  # a GPU other than the default
    assert other != DEFAULT_GPU
    pg.locator("#gpu").select_option(other)
    settle(pg)
    wait_url(pg, f"gpu={other}")
    url = pg.url
    assert "occ-threads=320" in url and "acc-preset=padded" in url and f"gpu={other}" in url
    # reload: the same view
    pg.reload()
    pg.wait_for_selector("body[data-ready='1']")
    settle(pg)
    assert pg.locator("input[data-k='occ-threads']").input_value() == "320"
    assert pg.locator("select[data-k='acc-preset']").input_value() == "padded"
    assert pg.locator("#gpu").input_value() == other
    o = occupancy(other, 320, 64, 0, 48 * 1024)
    assert text(pg, "occ-blocks") == str(o.blocks_per_sm)
    assert text(pg, "acc-main") == "1"  # padded: no conflict
    # back: the GPU returns to the default, then the preset; forward brings the GPU back
    pg.go_back()
    pg.locator("#gpu").wait_for()
    sync_api.expect(pg.locator("#gpu")).to_have_value(DEFAULT_GPU)
    settle(pg)
    pg.go_back()
    sync_api.expect(pg.locator("select[data-k='acc-preset']")).to_have_value("column")
    settle(pg)
    assert text(pg, "acc-main") == "32"
    pg.go_forward()
    sync_api.expect(pg.locator("select[data-k='acc-preset']")).to_have_value("padded")
    settle(pg)  # the forward step's restore finishes first: it would overwrite a value typed during it
    # a typed expression is part of the view too
    expr = pg.locator("input[data-k='acc-expr']")
    expr.fill("lane * 3")
    # the whole value, not a prefix: the padded preset's "lane * 33" is already in the address
    for _ in range(200):
        q = urllib.parse.parse_qs((pg.locator("body").get_attribute("data-url") or "").split("?", 1)[-1])
        if q.get("acc-expr") == ["lane * 3"]:
            break
        if expr.input_value() != "lane * 3":  # a late restore put the preset's expression back: type it again
            expr.fill("lane * 3")
        pg.wait_for_timeout(50)
    else:
        raise AssertionError(f"the address never took the typed expression: {pg.url}")
    pg2 = fresh_page(page, "?" + pg.url.split("?", 1)[1])
    settle(pg2, "access")
    assert pg2.locator("input[data-k='acc-expr']").input_value() == "lane * 3"
    want = analyze_access([3 * 4 * lane for lane in range(32)], 4, "shared")
    assert text(pg2, "acc-main") == str(want["wavefronts"])
    # copy link: the button hands out the view's address
    pg2.locator("[data-k='copy-link']").click()
    copied = pg2.locator("body").get_attribute("data-copied")
    assert copied.startswith(page.base_url) and "acc-expr=lane" in copied
    assert pg2.locator("[data-k='link-url']").input_value() == copied
    pg2.locator("[data-k='link-access']").click()
    assert pg2.locator("body").get_attribute("data-copied").endswith("#panel-access")
    pg.close()
    pg2.close()


def test_measured_figures_equal_the_committed_rows(page):
    import csv
    import gzip
    import itertools
    import json

    pg = fresh_page(page, "?gpu=h200")
    # occupancy: the CUDA runtime's answer for 256 threads, 64 registers, 48 KB
    link = pg.locator("[data-k='occ-measured-link']")
    line = int(link.inner_text().rsplit("row ", 1)[1])
    with gzip.open(ROOT / "tests/data/occupancy/h200.csv.gz", "rt") as f:
        r = next(itertools.islice(csv.DictReader(f), line - 2, None))  # the CSV line the link names
    assert (r["threads"], r["num_regs"], r["dynamic_smem"]) == ("256", "64", str(48 * 1024))
    assert text(pg, "occ-measured-blocks") == r["blocks"] == text(pg, "occ-blocks")
    # the link answers with the row
    href = link.get_attribute("href")
    entry = json.loads(pg.context.request.get(page.base_url.rstrip("/") + href).text())["entry"]
    assert entry["blocks"] == int(r["blocks"]) and entry["threads"] == 256
    # warp access: Nsight Compute's counters for the column pattern
    ncu = json.loads((ROOT / "tests/data/ncu/ncu_access_round1.json").read_text())
    (pat,) = [
        p
        for p in ncu["patterns"]
        if p["name"] == "stride128B" and p["space"] == "shared" and p["op"] == "ld" and p["width"] == 4
    ]
    assert text(pg, "acc-measured-wavefronts") == str(
        pat["metrics"]["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
    )
    assert text(pg, "acc-measured-bank_conflicts") == str(
        pat["metrics"]["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
    )
    assert (
        pg.locator("[data-k='acc-measured-link']").inner_text()
        == f"tests/data/ncu/ncu_access_round1.json · row {pat['id']}"
    )
    # hierarchy and decode: the H200 GEMM row of the same shape
    bench = json.loads((ROOT / "benchmarks/results/h200/gemm.json").read_text())
    i, row = next((i, r) for i, r in enumerate(bench["rows"]) if r["shape"] == "64x24576x8192" and r["dtype"] == "bf16")
    assert text(pg, "hier-measured-ms") == f"{row['ours_ms'] * 1e3:.1f} µs"
    assert text(pg, "hier-measured-tflops") == f"{row['tflops']:.1f}"
    assert pg.locator("[data-k='hier-measured-link']").inner_text() == f"benchmarks/results/h200/gemm.json · row {i}"
    assert "NVIDIA H200" in pg.locator("#panel-hierarchy [data-k='hier-measured'] .measured-head").inner_text()
    assert "triton 3.6.0" in pg.locator("#panel-hierarchy [data-k='hier-measured'] .measured-head").inner_text()
    probe = pg.locator("[data-k='hier-l2-probe-link']")
    assert probe.inner_text() == "benchmarks/results/h200/l2_probe.json · row 27"  # the 1 GiB read: HBM
    entry = json.loads(pg.context.request.get(page.base_url.rstrip("/") + probe.get_attribute("href")).text())["entry"]
    assert entry["MiB"] == 1024 and f"{entry['TBps']:.2f} TB/s" in pg.locator("[data-k='hier-l2-probe']").inner_text()
    skinny = [r for r in bench["rows"] if r["shape"].endswith("x24576x8192") and r["dtype"] == "bf16"]
    assert pg.locator("#panel-decode .measured-pt").count() == len(skinny)  # every measured batch on the roofline
    move(pg, "dec-batch", ["ArrowRight"] * 63, "decode")  # batch 64: the same row
    assert text(pg, "dec-measured-ms") == f"{row['ours_ms'] * 1e3:.1f} µs"
    # the pipeline's three designs, measured as kernels
    designs = json.loads((ROOT / "benchmarks/results/h200/attention_fa3_designs.json").read_text())["rows"]
    for r in designs:
        assert text(pg, f"pipe-measured-{r['design']}-ms") == f"{r['measured_ms']:.3f} ms"
        assert text(pg, f"pipe-measured-{r['design']}-tc") == f"{100 * r['tc_active']:.1f}%"
    # another GPU: no H200 figure is shown as its own
    pg.locator("#gpu").select_option("h100-sxm")
    settle(pg)
    assert (
        pg.locator("[data-k='occ-measured']").count() == 0 and pg.locator("[data-k='hier-measured-none']").count() == 1
    )
    pg.close()


EXERCISE_TOPICS = {
    "access": "access",
    "occupancy": "occupancy",
    "latency": "latency",
    "tensorcore": "feeding",
    "registers": "registers",
    "l2": "l2",
    "pipeline": "pipeline",
    "decode": "decode",
    "moe": "moe",
}


def test_exercises_right_and_wrong_answers(page):
    from tilewise.web.exercises import exercise

    pg = fresh_page(page)
    for panel, topic in EXERCISE_TOPICS.items():
        box = pg.locator(f"#panel-{panel} [data-k='ex-{topic}']")
        box.scroll_into_view_if_needed()
        sync_api.expect(box).to_have_attribute("data-busy", "0")
        q = exercise({"topic": topic, "variant": "0"})
        want = exercise({"topic": topic, "variant": "0", "answer": "0"}) if q["kind"] == "number" else None
        assert pg.locator(f"[data-k='ex-{topic}-question']").inner_text() == q["question"].replace("`", "")
        answer = pg.locator(f"[data-k='ex-{topic}-answer']")
        if q["kind"] == "choice":
            first = exercise({"topic": topic, "variant": "0", "answer": q["options"][0][0]})
            right, wrong = first["answer"], next(o[0] for o in q["options"] if o[0] not in first["accept"])
            answer.select_option(wrong)
        else:
            right = str(want["answer"])
            wrong = str(want["answer"] + want["tolerance"] + 7)
            answer.fill(wrong)
        answer.press("Enter") if q["kind"] == "number" else pg.locator(f"[data-k='ex-{topic}-check']").click()
        sync_api.expect(pg.locator(f"[data-k='ex-{topic}-result']")).to_have_text("Not quite.")
        shown = pg.locator(f"[data-k='ex-{topic}-answer-shown']").inner_text()
        full = exercise({"topic": topic, "variant": "0", "answer": right})
        assert full["correct"]
        if q["kind"] == "number":
            assert shown == f"{full['answer']}{' ' + full['unit'] if full['unit'] else ''}"
            answer.fill(right)
        else:
            assert shown == dict(map(tuple, full["options"]))[full["answer"]]
            answer.select_option(right)
        pg.locator(f"[data-k='ex-{topic}-check']").click()
        sync_api.expect(pg.locator(f"[data-k='ex-{topic}-result']")).to_have_text("Right.")
        assert box.locator(".prose p").count() >= 2  # the reasoning
    # another problem: the variant is in the URL and survives a reload
    pg.locator("[data-k='ex-moe-next']").click()
    wait_url(pg, "ex-moe=1")
    q1 = exercise({"topic": "moe", "variant": "1"})
    sync_api.expect(pg.locator("[data-k='ex-moe-question']")).to_have_text(q1["question"])
    pg.reload()
    pg.wait_for_selector("body[data-ready='1']")
    sync_api.expect(pg.locator("[data-k='ex-moe-question']")).to_have_text(q1["question"])
    pg.close()


def test_polish_labels_pipeline_titles_colours(page):
    pg = fresh_page(page)
    settle(pg, "access")
    # every lane label fits inside its lane box
    overflow = pg.locator("#panel-access svg").first.evaluate(
        """svg => [...svg.querySelectorAll('rect')].filter(r => r.getAttribute('height') === '30').map((r, i) => {
            const t = r.nextElementSibling.nextElementSibling; const a = r.getBBox(), b = t.getBBox();
            return (b.x < a.x - 0.5 || b.x + b.width > a.x + a.width + 0.5) ? i : -1; }).filter(i => i >= 0)"""
    )
    assert overflow == []
    before = pg.locator("#panel-access").get_attribute("data-updates")
    pg.locator("input[data-k='acc-expr']").fill("lane * 123457")
    pg.locator(f"#panel-access[data-busy='0']:not([data-updates='{before}'])").wait_for()
    overflow = pg.locator("#panel-access svg").first.evaluate(
        """svg => [...svg.querySelectorAll('rect')].filter(r => r.getAttribute('height') === '30').map((r, i) => {
            const t = r.nextElementSibling.nextElementSibling; const a = r.getBBox(), b = t.getBBox();
            return (b.x < a.x - 0.5 || b.x + b.width > a.x + a.width + 0.5) ? i : -1; }).filter(i => i >= 0)"""
    )
    assert overflow == []
    # the pipeline's design (b) is titled with the slider's S; one-consumer designs never use consumer 1's colour
    settle(pg, "pipeline")
    titles = pg.locator("#panel-pipeline svg text[font-weight='700']").all_text_contents()
    assert any(t.startswith("(b) 2-stage ring buffer") for t in titles), titles
    move(pg, "pipe-stages", ["ArrowRight"], "pipeline")
    titles = pg.locator("#panel-pipeline svg text[font-weight='700']").all_text_contents()
    assert any(t.startswith("(b) 3-stage ring buffer") for t in titles), titles
    green = pg.locator("#panel-pipeline rect[data-kind='mma'][data-consumer='1']")
    assert green.count() > 0 and all(
        c == "#0f9d76" for c in [green.nth(i).get_attribute("fill") for i in range(green.count())]
    )
    assert pg.locator("#panel-pipeline rect[fill='#0f9d76']").count() == green.count()
    pg.close()


def test_readable_at_laptop_and_narrow_sizes_keyboard_and_export(page):
    ARTIFACTS.mkdir(exist_ok=True)
    for w, h in ((1280, 800), (390, 844)):
        pg = fresh_page(page, width=w, height=h)
        wide = pg.locator("body").evaluate(
            "b => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert wide <= 1, (w, wide)  # nothing pushes the page sideways
        for pid in [p.id for p in api.available()]:
            card = pg.locator(f"#panel-{pid}")
            box = card.bounding_box()
            assert box["width"] <= w, (pid, w, box)
            if w < 1000:  # the laptop size is shot by test_screenshots_and_no_console_errors
                card.scroll_into_view_if_needed()
                card.screenshot(path=str(ARTIFACTS / f"explorer-{pid}-{w}.png"))
        pg.close()
    pg = fresh_page(page)
    # keyboard: Tab reaches the copy-link control, Enter presses it
    pg.locator("#gpu").focus()
    pg.keyboard.press("Tab")
    assert pg.evaluate("document.activeElement.dataset.k") == "copy-link"
    pg.keyboard.press("Enter")
    assert pg.locator("body").get_attribute("data-copied").startswith(page.base_url)
    # export: SVG and PNG downloads of a panel's drawing
    with pg.expect_download() as dl:
        pg.locator("[data-k='svg-occupancy']").click()
    svg = Path(dl.value.path()).read_text()
    assert svg.startswith("<svg") and "occupancy limits" not in svg or svg.count("<rect") > 10
    import xml.dom.minidom

    xml.dom.minidom.parseString(svg)  # a well-formed, standalone SVG document
    with pg.expect_download() as dl:
        pg.locator("[data-k='png-occupancy']").click()
    png = Path(dl.value.path()).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000
    pg.close()


def test_every_panels_own_inputs_round_trip(page):
    """Text inputs and animation steps are part of the view too: the MoE rows and picked tile, the tiling step."""
    query = "?moe-rows=7,7,130&moe-tile=5&tile-step=37&tile-blocks=2,2,2&dec-shape=4096,14336&pipe-n=176"
    pg = fresh_page(page, query)
    assert pg.locator("input[data-k='moe-rows']").input_value() == "7,7,130"
    assert text(pg, "moe-tiles") == str(waves_total([7, 7, 130]))
    assert pg.locator("[data-k='moe-picked']").inner_text().startswith("Tile 5:")
    assert pg.locator("input[data-k='tile-step']").input_value() == "37"
    assert text(pg, "tile-step-value") == "38"
    assert pg.locator("select[data-k='dec-shape']").input_value() == "4096,14336"
    assert pg.locator("select[data-k='pipe-n']").input_value() == "176"
    # keyboard: the tile schedule takes arrow keys, and the picked tile goes into the address
    svg = pg.locator("[data-k='moe-svg']")
    svg.focus()
    svg.press("ArrowRight")
    assert pg.locator("[data-k='moe-picked']").inner_text().startswith("Tile 6:")
    wait_url(pg, "moe-tile=6")
    pg.locator("[data-k='moe-svg']").press("End")
    last = waves_total([7, 7, 130]) - 1
    assert pg.locator("[data-k='moe-picked']").inner_text().startswith(f"Tile {last}:")
    pg.close()


def waves_total(rows: list[int]) -> int:
    from tilewise.model import waves

    return waves.grouped_schedule(rows, 64, 512, 128).total_tiles


def test_advisor_panel_ranks_and_measures(page):
    import json

    from tilewise.advise import advise

    pg = fresh_page(page, "?gpu=h200&adv-kernel=gemm&adv-gemm-m=1&adv-gemm-n=6144&adv-gemm-k=4096&adv-layout=nt")
    settle(pg, "advisor")
    problem = {"m": 1, "n": 6144, "k": 4096, "dtype": "bf16", "layout": "nt"}
    want = advise("gemm", problem, gpu="h200", top_k=5)
    for i, a in enumerate(want):
        assert text(pg, f"adv-tag-{i}") == a.tag
        assert text(pg, f"adv-ms-{i}") == f"{a.prediction.ms * 1e3:.1f} µs"
        assert text(pg, f"adv-binding-{i}") == a.prediction.binding
    # the measured best: the fastest line of the committed sweep for this problem
    lines = [
        (i, r)
        for i, r in enumerate((ROOT / "tests/data/sweeps/h200/gemm.jsonl").read_text().splitlines(), 1)
        for r in [json.loads(r)]
        if r.get("ms") and r["key"] == "1x6144x4096_bf16_nt" and r["source"] == "space"
    ]
    best_line, best = min(lines, key=lambda x: x[1]["ms"])
    assert text(pg, "adv-measured-ms") == f"{best['ms'] * 1e3:.1f} µs"
    assert text(pg, "adv-measured-tag") == best["tag"]
    assert (
        pg.locator("[data-k='adv-measured-link']").inner_text()
        == f"tests/data/sweeps/h200/gemm.jsonl · row {best_line}"
    )
    # the Gluon kernel's configs in the model's order, each beside its line of the Gluon sweep
    from tilewise.advise.space import gemm_gluon_space, gemm_gluon_tag
    from tilewise.model.predict import gemm_gluon

    ranked = sorted((gemm_gluon(problem, c).ms, gemm_gluon_tag(c)) for c in gemm_gluon_space(**problem))[:5]
    assert [text(pg, f"adv-gluon-tag-{i}") for i in range(len(ranked))] == [t for _, t in ranked]
    glu_rows = [json.loads(r) for r in (ROOT / "tests/data/sweeps/h200/gemm_gluon.jsonl").read_text().splitlines()]
    timed = {r["tag"] for r in glu_rows if r.get("ms") and r["key"] == "1x6144x4096_bf16_nt" and r["source"] == "space"}
    assert text(pg, "adv-gluon-measured-0").endswith(f"of {len(timed)})") and len(timed) == 19
    # another problem through the controls, then back: the URL carries it
    before = pg.locator("#panel-advisor").get_attribute("data-updates")
    pg.locator("select[data-k='adv-kernel']").select_option("decode")
    pg.locator(f"#panel-advisor[data-busy='0']:not([data-updates='{before}'])").wait_for()
    wait_url(pg, "adv-kernel=decode")
    d = advise("decode", {"batch": 8, "heads": 32, "kv_heads": 8, "seq_len": 32768, "head_dim": 128}, gpu="h200")
    assert text(pg, "adv-tag-0") == d[0].tag
    pg.go_back()
    sync_api.expect(pg.locator("select[data-k='adv-kernel']")).to_have_value("gemm")
    settle(pg, "advisor")
    assert text(pg, "adv-tag-0") == want[0].tag
    pg.close()
