"""Exercises: each topic's answer is checked against an answer derived here from first principles and the
registry's datasheet figures (never the model function the endpoint calls), and by hand where a figure is
known; right and wrong answers; bad input is a one-line refusal."""

import math
import warnings

import pytest

from tilewise import gpus
from tilewise.errors import InputError
from tilewise.model.tensorcore import ADDRESS_REGISTERS  # a model figure (registers for addresses), not a rule
from tilewise.web.exercises import EXERCISES, exercise

SEED_TOPICS = {"access", "occupancy", "latency", "feeding", "registers", "l2", "pipeline", "decode", "moe"}


def ask(topic, variant, answer=None):
    q = {"topic": topic, "variant": str(variant)}
    if answer is not None:
        q["answer"] = str(answer)
    return exercise(q)


def _lanes(expr: str) -> list[int]:
    """The element index of each of the 32 lanes, evaluated here (not by the page's own parser)."""
    return [int(eval(expr, {"__builtins__": {}}, {"lane": lane})) for lane in range(32)]


def _peak_flops_per_cycle_per_sm(g, dtype: str) -> float:
    return 2 * g.dense_macs_per_tc_per_cycle[dtype] * g.tensor_cores_per_sm


def _hbm_bytes_per_cycle_per_sm(g) -> float:
    return g.hbm_bytes_per_s / g.sms / (g.tensor_clock_mhz * 1e6)  # HBM does not follow the SM clock


def independent_answer(topic: str, v: dict):
    """Each topic's answer from first principles and the registry's datasheet figures, never through the
    model function the endpoint calls."""
    g = gpus.get(v.get("gpu", gpus.DEFAULT_GPU))  # the endpoint's default GPU where the variant names none
    if topic == "access":  # 4-byte elements
        idx = _lanes(v["expr"])
        if v["space"] == "shared":  # a bank serves one 4-byte word per pass; one word for many lanes is a broadcast
            words_per_bank: dict[int, set[int]] = {}
            for i in idx:
                words_per_bank.setdefault(i % 32, set()).add(i)
            return max(len(w) for w in words_per_bank.values())
        return len({(4 * i) // 32 for i in idx})  # 32-byte sectors touched
    if topic == "occupancy":
        threads, regs, smem = int(v["threads"]), int(v["registers"]), int(v["smem"])
        warps = math.ceil(threads / g.warp_size)
        per_warp = math.ceil(regs * g.warp_size / g.reg_alloc_unit) * g.reg_alloc_unit
        limits = {
            "warps": g.max_warps_per_sm // warps,
            "blocks": g.max_blocks_per_sm,
            "registers": g.regs_per_sm // (per_warp * warps),
        }
        if smem:
            limits["shared_memory"] = g.smem_per_sm // (smem + g.reserved_smem_per_block)
        low = min(limits.values())
        return {k for k, n in limits.items() if n == low}
    if topic == "latency":  # Little's law: bytes in flight = latency x the SM's share of HBM bandwidth
        in_flight = int(float(v["latency"]) * _hbm_bytes_per_cycle_per_sm(g))  # whole bytes: 600 x 13.87 = 8320
        per_warp = g.warp_size * int(v["width"]) * int(v["ilp"])
        return max(1, math.ceil(in_flight / per_warp))
    # wgmma m64 nN k16 in 16-bit: A (64 x 16) re-read from shared memory per instruction, B 16 x N
    e = 2
    a_cycles = 64 * 16 * e / g.smem_bytes_per_cycle_per_sm  # 16
    b_per_n = 16 * e / g.smem_bytes_per_cycle_per_sm  # 0.25
    compute_per_n = 2 * 64 * 16 / _peak_flops_per_cycle_per_sm(g, "bf16")  # 0.5
    if topic == "feeding" and "n" in v:
        n = int(v["n"])
        return round(compute_per_n * n / (a_cycles + b_per_n * n), 2)
    if topic == "feeding":
        return a_cycles / (compute_per_n - b_per_n)  # compute = feed
    if topic == "registers":  # per thread of a 128-thread consumer: S N/2, P N/4, O d/2, 2 rows' max and sum
        d = int(v["head_dim"])
        fits = [n for n in range(16, 257, 16) if n / 2 + n / 4 + d / 2 + 4 + ADDRESS_REGISTERS <= g.max_regs_per_thread]
        return max(fits)
    if topic == "l2":  # a KV tile's intensity is M; HBM sees (1 - hit) of the bytes
        m = int(v["m"])
        balance = _peak_flops_per_cycle_per_sm(g, "bf16") * g.sms * g.tensor_clock_mhz * 1e6 / g.hbm_bytes_per_s
        return round(100 * max(0.0, 1 - m / balance), 1)
    if topic == "pipeline":  # steady cycles per K/V tile of each design, two 64-row blocks per tile
        n, d, hit, stages = int(v["n"]), 128, float(v["hit"]), int(v["stages"])
        mma = 4 * 64 * n * d / _peak_flops_per_cycle_per_sm(g, "bf16")  # Q K^T and P V of one row block
        soft = 64 * n / g.sfu_ops_per_cycle_per_sm  # one exponential per score
        load = 2 * n * d * e * (1 - hit) / _hbm_bytes_per_cycle_per_sm(g)  # K and V
        per = {
            "serial": load + 2 * (mma + soft),  # load, then both row blocks' GEMMs and softmaxes in turn
            "ring": (load + 2 * mma + soft) if stages == 1 else max(load, 2 * (mma + soft)),
            "pingpong": (load + 2 * mma) if stages == 1 else max(load, 2 * mma, mma + soft),
        }
        best = min(per.values())
        return {k for k, c in per.items() if math.isclose(c, best)}
    if topic == "decode":  # first batch b with 2 b K N FLOPs / (b K + K N + b N) elements >= the balance
        k, n, dt = int(v["k"]), int(v["n"]), v["dtype"]
        size = {"bf16": 2, "fp16": 2, "fp8": 1}[dt]
        balance = _peak_flops_per_cycle_per_sm(g, dt) * g.sms * g.tensor_clock_mhz * 1e6 / g.hbm_bytes_per_s
        b = 1
        while 2 * b * k * n / ((b * k + k * n + b * n) * size) < balance:
            b += 1
        return b
    if topic == "moe":  # each expert's rows in whole tiles, times the N tiles
        rows = [int(r) for r in v["rows"].split(",")]
        bm, n, bn = int(v["block_m"]), int(v["n"]), int(v["block_n"])
        return sum(math.ceil(r / bm) for r in rows) * math.ceil(n / bn)
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
