"""Exercises: each topic's answer is the model function's, checked here against the function itself
(and by hand where a figure is known); right and wrong answers; bad input is a one-line refusal."""

import math
import warnings

import pytest

from tilewise import gpus
from tilewise.errors import InputError
from tilewise.model import decode, latency, pipeline, roofline, tensorcore, waves
from tilewise.model.occupancy import occupancy
from tilewise.sim import analyze_access
from tilewise.web.exercises import EXERCISES, exercise
from tilewise.web.lane_expr import lane_indices

SEED_TOPICS = {"access", "occupancy", "latency", "feeding", "registers", "l2", "pipeline", "decode", "moe"}


def ask(topic, variant, answer=None):
    q = {"topic": topic, "variant": str(variant)}
    if answer is not None:
        q["answer"] = str(answer)
    return exercise(q)


def independent_answer(topic: str, v: dict):
    g = gpus.get(v.get("gpu", "h100-sxm"))
    if topic == "access":
        width = int(v.get("width", "4"))
        base = 0 if v["space"] == "shared" else 1 << 20
        addrs = [base + i * width for i in lane_indices(v["expr"], 32)]
        c = analyze_access(addrs, width, v["space"])
        return c["wavefronts"] if v["space"] == "shared" else c["sectors"]
    if topic == "occupancy":
        return set(occupancy(g, int(v["threads"]), int(v["registers"]), 0, int(v["smem"])).limiters)
    if topic == "latency":
        return latency.warps_to_hide_memory(
            int(v["latency"]), int(v["width"]), int(v["ilp"]), g, int(v["threads"]), int(v["registers"])
        ).warps_needed
    if topic == "feeding" and "n" in v:
        return round(tensorcore.smem_feed(int(v["n"]), v["dtype"], "SS", g.key).ratio, 2)
    if topic == "feeding":
        return tensorcore.smem_feed(64, v["dtype"], "SS", g.key).break_even_n
    if topic == "registers":
        d = int(v["head_dim"])
        return max(n for n in range(16, 257, 16) if tensorcore.register_budget(d, n, 64, "bf16", g.key).fits)
    if topic == "l2":
        intensity = roofline.kv_tile_intensity(int(v["m"]), 128, 128, "bf16").intensity
        return round(100 * roofline.hit_rate_for_compute_roof(intensity, g, "bf16"), 1)
    if topic == "pipeline":
        t = pipeline.attention_tile_times(128, int(v["n"]), 64, "bf16", float(v["hit"]), g)
        res = pipeline.compare(int(v["tiles"]), t.load, t.mma, t.softmax, int(v["stages"]))
        best = max(x.tensor_utilisation for x in res.values())
        return {k for k, x in res.items() if math.isclose(x.tensor_utilisation, best)}
    if topic == "decode":
        return decode.batch_for_compute_bound(int(v["k"]), int(v["n"]), v["dtype"], g)
    if topic == "moe":
        rows = [int(r) for r in v["rows"].split(",")]
        return waves.grouped_schedule(rows, int(v["block_m"]), int(v["n"]), int(v["block_n"])).total_tiles
    raise AssertionError(topic)


def test_one_exercise_per_seed_topic():
    assert set(EXERCISES) == SEED_TOPICS
    assert all(len(e.variants) >= 2 for e in EXERCISES.values())


@pytest.mark.parametrize("topic", sorted(SEED_TOPICS))
def test_answers_are_the_model_functions(topic):
    for variant, inputs in enumerate(EXERCISES[topic].variants):
        q = ask(topic, variant)
        assert "answer" not in q and "reasoning" not in q  # the problem alone until the reader answers
        assert q["question"] and q["inputs"] == inputs
        want = independent_answer(topic, inputs)
        probe = q["options"][0][0] if q["kind"] == "choice" else "0"
        d = ask(topic, variant, probe)
        if q["kind"] == "choice":
            assert set(d["accept"]) == want and d["answer"] in want
        elif topic == "decode":
            assert abs(d["answer"] - want) <= 0.5  # rounded to a batch
        else:
            assert d["answer"] == want
        assert len(d["reasoning"]) >= 2
        # the right answer is right, a wrong one is wrong
        right = d["answer"]
        assert ask(topic, variant, right)["correct"] is True
        if q["kind"] == "choice":
            wrong = [o[0] for o in q["options"] if o[0] not in d["accept"]]
            assert wrong and ask(topic, variant, wrong[0])["correct"] is False
        else:
            assert ask(topic, variant, right + d["tolerance"] + 1)["correct"] is False
            if d["tolerance"]:
                assert ask(topic, variant, right + d["tolerance"] / 2)["correct"] is True


def test_the_seeds_own_figures():
    """Known examples, by hand: a tile's column is a 32-way conflict, padding to 33 removes it;
    40, 0, 130, 64 rows in 64-row tiles over 4 n tiles is (1 + 0 + 3 + 1) x 4 = 20 tiles."""

    def variant(topic, **inputs):
        return next(i for i, v in enumerate(EXERCISES[topic].variants) if all(v.get(k) == x for k, x in inputs.items()))

    assert ask("access", variant("access", expr="lane * 32"), 32)["correct"]
    assert ask("access", variant("access", expr="lane * 33"), 1)["correct"]
    assert ask("moe", 0, 20)["correct"]
    assert ask("feeding", 1, 64)["correct"]  # SS keeps up from N = 64 (bf16)
    assert (
        ask("feeding", 0, 1.33)["correct"] and ask("feeding", 3, 1.6)["correct"]
    )  # 64/48 = 4/3 at N = 128, 128/80 = 1.6 at N = 256
    assert ask("occupancy", 0, "registers")["correct"]  # 256 threads x 128 registers: 2 blocks of 64K
    d = ask("decode", variant("decode", n="24576", k="8192", dtype="bf16"), 311)
    assert d["correct"] and "311" in " ".join(
        d["reasoning"]
    )  # first batch b with 2bKN / 2(bK + KN + bN) >= 295 FLOP/B: 311 on the H100


def test_variant_wraps_and_bad_input_is_refused():
    n = len(EXERCISES["moe"].variants)
    assert ask("moe", n)["variant"] == 0
    for query, msg in (
        ({"topic": "disk"}, "topic must be one of"),
        ({"topic": "moe", "variant": "-1"}, "variant must be an integer"),
        ({"topic": "moe", "answer": "lots"}, "answer must be a number"),
        ({"topic": "moe", "answer": "nan"}, "answer must be a finite number"),
        ({"topic": "pipeline", "answer": "d"}, "answer must be one of"),
        ({"topic": "moe", "extra": "1"}, "unknown parameter"),
    ):
        with pytest.raises(InputError, match=msg):
            exercise(query)
    assert ask("l2", 2, "78.3%")["correct"]  # M = 64 on the H100; a percent sign is fine


def test_over_http():
    pytest.importorskip("starlette")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    from tilewise.web.server import create_app

    with TestClient(create_app(), base_url="http://127.0.0.1") as c:
        r = c.get("/api/exercise", params={"topic": "access", "variant": 1, "answer": 1})
        assert r.status_code == 200 and r.json()["correct"] is True
        r = c.get("/api/exercise", params={"topic": "access", "answer": "x"})
        assert r.status_code == 400 and "answer must be a number" in r.json()["error"]
