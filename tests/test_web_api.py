"""The explorer's JSON endpoints: every figure equals the model function's; bad input -> 400 with a message."""

import math
import warnings

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette 1.x: "Using httpx with starlette.testclient is deprecated"
    from starlette.testclient import TestClient

from tilewise import gpus
from tilewise.model import decode, latency, pipeline, roofline, tensorcore, traffic, waves
from tilewise.model.occupancy import occupancy
from tilewise.sim import analyze_access
from tilewise.web import api
from tilewise.web.server import create_app


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(), base_url="http://127.0.0.1") as c:
        yield c


def get(client, path, **params):
    r = client.get(path, params=params)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    return r.json()


def bad(client, path, expect: str, status=400, **params):
    r = client.get(path, params=params)
    assert r.status_code == status, (params, r.status_code, r.text)
    msg = r.json()["error"]
    assert expect in msg, (expect, msg)
    return msg


# ------------------------------------------------------------------------------ listing


def test_gpus_and_panels(client):
    d = get(client, "/api/gpus")
    assert [g["key"] for g in d["gpus"]] == gpus.names()
    h100 = next(g for g in d["gpus"] if g["key"] == "h100-sxm")
    assert h100["sms"] == 132 and round(h100["balance_bf16"]) == 295 and h100["wgmma"]
    panels = get(client, "/api/panels")["panels"]
    ids = [p["id"] for p in panels]
    # Every panel whose model exists is listed, in page order; each one answers with its defaults.
    assert ids == [p.id for p in api.available()]
    assert ids == list(api.ORDER[: len(ids)])  # every panel of the page order, none missing
    assert len(ids) >= 12
    assert ids == sorted(ids, key=api.ORDER.index)
    for pid in ids:
        get(client, f"/api/{pid}")


def test_unknown_endpoint_and_methods(client):
    bad(client, "/api/nope", "unknown endpoint /api/nope", status=404)
    r = client.get("/no/such/page")
    assert r.status_code == 404
    r = client.post("/api/occupancy", content=b"{}")
    assert r.status_code == 405
    r = client.request("DELETE", "/")
    assert r.status_code == 405
    bad(client, "/api/gpus", "takes no parameters", x="1")


def test_loopback_only_and_headers(client):
    r = client.get("/api/gpus", headers={"host": "evil.example"})
    assert r.status_code == 400  # DNS rebinding: only loopback host names are served
    r = client.get("/")
    assert r.status_code == 200 and "tilewise explorer" in r.text
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"


# ------------------------------------------------------------------------------ panels = model


def test_occupancy_equals_model(client):
    for gpu, threads, regs, smem in [
        ("h100-sxm", 256, 64, 48 * 1024),
        ("a100", 128, 255, 0),
        ("h200", 1024, 32, 100_000),
    ]:
        d = get(client, "/api/occupancy", gpu=gpu, threads=threads, registers=regs, smem=smem)
        o = occupancy(gpu, threads, regs, 0, smem).to_dict()
        assert d["result"] == o
        assert len(d["what_if"]["threads"]) == 32
    # sizes as the CLI writes them
    d = get(client, "/api/occupancy", threads=128, registers=32, smem="48K")
    assert d["result"]["dynamic_smem"] == 48 * 1024


def test_occupancy_bad_parameters(client):
    bad(client, "/api/occupancy", "threads must be an integer in [1, 1024], got 2048", threads=2048)
    bad(client, "/api/occupancy", "registers must be an integer in [0, 255], got 300", registers=300)
    bad(client, "/api/occupancy", "threads must be an integer", threads="abc")
    bad(client, "/api/occupancy", "smem must be between 0 and", smem="300K")
    bad(client, "/api/occupancy", "smem must be a size in bytes", smem="lots")
    bad(client, "/api/occupancy", "unknown GPU 'v100'", gpu="v100")
    bad(client, "/api/occupancy", "unknown parameter 'thread'", thread=128)
    r = client.get("/api/occupancy?threads=1&threads=2")
    assert r.status_code == 400 and "more than once" in r.json()["error"]


def test_hierarchy_the_articles_grid(client):
    d = get(client, "/api/hierarchy", gpu="h100-sxm")  # the 64 x 24576 GEMM on an H100 SXM
    assert d["grid"] == [1, 192] and d["blocks"] == 192
    w = waves.grid_waves(192, 132, 1)
    assert d["waves"] == w.to_dict()
    assert d["busy_sms_per_wave"] == [132, 60]
    assert d["warps_per_block"] == 8 and d["a_tile_bytes"] == 2048 and d["b_tile_bytes"] == 4096
    assert d["k_steps"] == 512
    # the stream-K view: the one row of 192 tiles x 512 steps dealt over 132 CTAs, at most 745 steps each
    sk = d["stream_k"]
    assert (sk["lanes"], sk["per_lane"], sk["grid"]) == (1, 132, 132)
    assert sk["busiest_steps"] == -(-192 * 512 // 132) == 745
    assert sk["efficiency"] == pytest.approx(192 * 512 / (132 * 745)) and sk["efficiency"] > d["waves"]["efficiency"]
    segs = waves.stream_k_segments(waves.stream_k_split(1, 192, 512, 132))
    assert sk["partials"] == sum(1 for cta in segs for s in cta if s.role == "partial") > 0
    assert len(sk["cta_steps"]) == 132 and sum(sk["cta_steps"]) == 192 * 512 and max(sk["cta_steps"]) == 745
    # Every block runs exactly once, on the SM and in the wave the schedule says.
    seen = sorted(b for bs in d["schedule"] for b in bs)
    assert seen == list(range(192))
    for sm, bs in enumerate(d["schedule"]):
        assert bs == waves.persistent_tiles(192, 132, sm)
        for wave, b in enumerate(bs):
            assert d["sm_of_block"][b] == sm and d["wave_of_block"][b] == wave
    assert any("192 blocks" in line for line in d["explain"]["tiling"])
    assert d["mma"]["flops_per_mma"] == 8192 and d["mma"]["mmas_per_k_step"] == 32
    hbm = d["memory"][0]
    assert hbm["bytes_per_s"] == 3.35e12 and round(hbm["balance"]) == 295
    bad(client, "/api/hierarchy", "must have at most 4096 blocks", m=65536, n=65536)
    bad(client, "/api/hierarchy", "tile must be a multiple of the 16x16", tile_m=24)
    bad(client, "/api/hierarchy", "threads must be a multiple of 32", threads=100)


def test_tiling_steps_are_the_models_traffic(client):
    d = get(client, "/api/tiling")
    assert d["grid"] == [4, 4] and d["k_steps"] == 4
    steps = d["steps"]
    assert len(steps) == 16 * (4 + 1)
    stores = [s for s in steps if s["op"] == "store"]
    assert len(stores) == 16  # each program writes its C tile once, after its K loop
    t = d["totals"]
    assert t["tiled_elements"] == traffic.gemm_tiled_hbm_bytes(8, 8, 8, 2, 2, "int8")
    assert t["naive_elements"] == traffic.gemm_naive_hbm_bytes(8, 8, 8, "int8")
    assert steps[-1]["loaded_a"] + steps[-1]["loaded_b"] + steps[-1]["written_c"] == t["tiled_elements"]
    # Awkward sizes: edge tiles are masked, counts still equal the model's.
    d = get(client, "/api/tiling", m=7, n=5, k=9, block_m=2, block_n=4, block_k=4)
    assert d["totals"]["tiled_elements"] == traffic.gemm_tiled_hbm_bytes(7, 5, 9, 2, 4, "int8")
    bad(client, "/api/tiling", "block_k must be an integer in [1, 16]", block_k=0)
    bad(client, "/api/tiling", "m must be an integer in [1, 32]", m=33)


def test_decode_equals_model(client):
    for batch in (1, 7, 64, 300):
        d = get(client, "/api/decode", batch=batch, gpu="h100-sxm")
        p = decode.decode_gemm_point(batch, 8192, 24576, "bf16", "h100-sxm").to_dict()
        for k, v in p.items():
            assert d["current"][k] == v
        assert d["fragments"]["mma"]["fill"] == decode.fragment_fill(batch, 16)
        assert d["fragments"]["wgmma"]["fill"] == decode.fragment_fill(batch, 64)
    d = get(client, "/api/decode", batch=1, gpu="h100-sxm")
    assert d["fragments"]["mma"]["fill"] == 1 / 16 and d["current"]["bound"] == "memory"
    assert d["batch_for_compute_bound"] == decode.batch_for_compute_bound(8192, 24576, "bf16", "h100-sxm")
    assert d["roof"][1]["attainable_flops"] == pytest.approx(gpus.peak_flops(gpus.get("h100"), "bf16"))
    bad(client, "/api/decode", "batch must be an integer in [1, 4096], got 0", batch=0)
    bad(client, "/api/decode", "dtype must be one of", dtype="fp64")


def test_moe_equals_model(client):
    d = get(client, "/api/moe", rows="40,0,130,64", programs=5)
    s = waves.grouped_schedule([40, 0, 130, 64], 64, 512, 128)
    assert d["schedule"] == api.clean(s.to_dict())
    assert [t["tile"] for t in d["tiles"]] == list(range(s.total_tiles))
    for t in d["tiles"]:
        assert (t["expert"], t["local"]) == waves.tile_owner(s.prefix, t["tile"])
        assert (t["m_tile"], t["n_tile"]) == waves.local_tile_coords(s, t["expert"], t["local"])
        assert t["tile"] in waves.persistent_tiles(s.total_tiles, 5, t["program"])
    assert d["busy_programs"] == 5 and d["idle_programs"] == 0
    bad(client, "/api/moe", "rows must hold integers", rows="1,x")
    bad(client, "/api/moe", "rows must be 1 to 64 comma-separated integers", rows=",".join(["1"] * 65))
    bad(client, "/api/moe", "must have at most 2048 tiles", rows="65536,65536", block_m=16, n=65536, block_n=16)


def test_hopper_panels_equal_model(client):
    for n, ratio in ((64, 1.0), (128, 4 / 3), (256, 1.6)):
        d = get(client, "/api/tensorcore", n=n)
        assert d["ss"] == tensorcore.smem_feed(n, "bf16", "SS").to_dict()
        assert d["ss"]["ratio"] == pytest.approx(ratio)
        assert d["rs"]["ratio"] == pytest.approx(2.0)
    bad(client, "/api/tensorcore", "N must be a multiple of 8", n=20)
    bad(client, "/api/tensorcore", "gpu must have wgmma", gpu="a100")
    d = get(client, "/api/registers", n=256, head_dim=128, gpu="h100-sxm")
    assert d["budget"] == tensorcore.attention_tile_budget(128, 256, 64, "bf16", 2, "h100-sxm")
    assert d["budget"]["registers"]["accumulators"] == 192
    bad(client, "/api/registers", "n must be a multiple of 16", n=24)
    d = get(client, "/api/l2", m=64, hit=0.8, gpu="h100-sxm")
    assert d["kv"]["intensity"] == 64
    assert d["current"] == roofline.l2_reuse(64, 0.8, "h100-sxm").to_dict()
    assert round(100 * d["current"]["needed_hit_rate"]) == 78
    bad(client, "/api/l2", "hit must be a number in [0.0, 0.99]", hit="nan")
    bad(client, "/api/l2", "hit must be a number in [0.0, 0.99]", hit="1.5")


def test_latency_and_pipeline_equal_model(client):
    d = get(client, "/api/latency", threads=128, registers=128, gpu="h100-sxm")
    assert d["current"] == latency.warps_to_hide_memory(600, 16, 1, "h100-sxm", 128, 128).to_dict()
    assert d["current"]["warps_needed"] == 17
    bad(client, "/api/latency", "kind must be one of", kind="disk")
    d = get(client, "/api/pipeline", hit=0.5, stages=3, tiles=4, gpu="h100-sxm")
    t = pipeline.attention_tile_times(128, 128, 64, "bf16", 0.5, "h100-sxm")
    want = pipeline.compare(4, t.load, t.mma, t.softmax, 3)
    assert [x["design"] for x in d["designs"]] == list(want)
    for got, tl in zip(d["designs"], want.values()):
        assert got["tensor_utilisation"] == tl.tensor_utilisation
        assert len(got["events"]) == len(tl.events)


def test_json_is_strict(client):
    """No NaN or Infinity reaches the browser's JSON.parse."""
    import json

    for p in api.available():
        r = client.get(f"/api/{p.id}")
        json.loads(r.text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    assert api.clean({"a": math.inf, "b": [math.nan, 1.5]}) == {"a": None, "b": [None, 1.5]}


def test_access_equals_simulator(client):
    cases = [
        ("shared", "column", 4, "all", 32, 31),
        ("shared", "padded", 4, "all", 1, 0),
        ("shared", "swizzled", 4, "all", 1, 0),
        ("shared", "broadcast", 4, "all", 1, 0),
    ]
    for space, preset, width, active, wavefronts, conflicts in cases:
        d = get(client, "/api/access", space=space, preset=preset, width=width, active=active)
        assert (d["counts"]["wavefronts"], d["counts"]["bank_conflicts"]) == (wavefronts, conflicts)
    for preset, sectors in (("contiguous", 4), ("strided", 32), ("broadcast", 1)):
        d = get(client, "/api/access", space="global", preset=preset)
        assert d["counts"]["sectors"] == sectors and d["counts"]["requests"] == 1
    # a typed expression, a partial mask, 16-byte lanes, a store: the simulator's answer every time
    d = get(client, "/api/access", space="shared", width=16, expr="(lane * 3) ^ 5", active="even", store=1)
    addrs = [((lane * 3) ^ 5) * 16 for lane in range(32)]
    assert d["counts"] == analyze_access(addrs, 16, "shared", active=0x55555555, store=True)
    assert [ln["offset"] for ln in d["lanes"]] == addrs
    assert d["preset"] == "custom" and d["expr"] == "(lane * 3) ^ 5"
    # the passes behind the count (tilewise.sim.shared_passes): a 16-byte broadcast load pairs lanes by i^1,
    # two passes of 16 lanes; a 16-byte contiguous load pairs nobody, four quarter-warps
    d = get(client, "/api/access", space="shared", width=16, preset="broadcast")
    assert d["passes"]["pairing"] == "i^1" and len(d["passes"]["passes"]) == 2 == d["counts"]["wavefronts"]
    d = get(client, "/api/access", space="shared", width=16, preset="contiguous")
    assert d["passes"]["pairing"] is None and len(d["passes"]["passes"]) == 4 == d["counts"]["wavefronts"]
    assert get(client, "/api/access", space="global", preset="contiguous")["passes"] is None
    # atomics: lanes on one address serialize (round 5 of the Nsight Compute fixture)
    d = get(client, "/api/access", space="shared", width=4, preset="broadcast", atomic=1)
    assert (d["counts"]["wavefronts"], d["counts"]["bank_conflicts"]) == (32, 31) and d["passes"] is None
    assert get(client, "/api/access", space="global", width=4, preset="broadcast", atomic=1)["counts"]["sectors"] == 32
    bad(client, "/api/access", "4- and 8-byte lanes only", width=16, atomic=1)
    bad(client, "/api/access", "not both", store=1, atomic=1)
    bad(client, "/api/access", "use // for integer division", expr="lane / 2")
    bad(client, "/api/access", "may use only the name `lane`", expr="__import__('os')")
    bad(client, "/api/access", "may use only the name `lane`", expr="x + 1")
    bad(client, "/api/access", "indices >= 0", expr="lane - 40")
    bad(client, "/api/access", "divides by zero", expr="lane // (lane - lane)")
    bad(client, "/api/access", "below 2^40", expr="lane << 40")
    bad(client, "/api/access", "at most 120 characters", expr="lane+" * 30)
    bad(client, "/api/access", "width must be one of", width=3)
    bad(client, "/api/access", "space must be one of", space="texture")


def test_divergence_runs_the_simulator(client):
    d = get(client, "/api/divergence", variant="data")
    for w in d["warps"]:
        assert sorted(set(w["side"])) == [1, 2]  # both sides taken within the warp
        assert w["lane_efficiency"] < 1
        assert [s == 1 for s in w["side"]] == [x > 0 for x in w["x"]]
    d = get(client, "/api/divergence", variant="sorted")
    assert [set(w["side"]) for w in d["warps"]] == [{2}, {1}]  # each warp agrees: one side each
    assert all(w["lane_efficiency"] == 1 for w in d["warps"])
    d = get(client, "/api/divergence", variant="select")
    assert all(w["lane_efficiency"] == 1 and set(w["side"]) == {3} for w in d["warps"])
    branchy = get(client, "/api/divergence", variant="data")["warps"][0]["warp_instructions"]
    assert d["warps"][0]["warp_instructions"] < branchy
    bad(client, "/api/divergence", "variant must be one of", variant="maybe")
