"""The three pipeline designs simulated on one SM (tilewise.model.pipeline)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilewise.errors import InputError
from tilewise.model import pipeline as pl

times = st.floats(0, 5000, allow_nan=False)


def test_serial_has_no_overlap():
    t = pl.simulate("serial", tiles=4, load=1000, mma=1024, softmax=512)
    assert t.makespan == pytest.approx(4 * (1000 + 2 * (1024 + 512)))
    assert t.tensor_utilisation == pytest.approx(4 * 2048 / t.makespan)


def test_ping_pong_beats_ring_when_softmax_shorter_than_mma():
    c = pl.compare(tiles=16, load=500, mma=1024, softmax=512, stages=2)
    assert c["serial"].tensor_utilisation < c["ring"].tensor_utilisation < c["pingpong"].tensor_utilisation
    # ring: the consumer's softmax leaves the Tensor Cores idle 1/3 of the time
    assert c["ring"].tensor_utilisation == pytest.approx(2048 / 3072, abs=0.03)
    assert c["pingpong"].tensor_utilisation > 0.9
    assert c["pingpong"].steady_cycles_per_tile == 2048


def test_load_bound_ring():
    t = pl.simulate("ring", tiles=32, load=5000, mma=1024, softmax=512, stages=4)
    assert t.makespan == pytest.approx(32 * 5000 + 2 * (1024 + 512), rel=1e-9)


def test_timeline_json_and_ascii():
    t = pl.simulate("pingpong", tiles=3, load=300, mma=1024, softmax=512)
    d = json.loads(json.dumps(t.to_dict()))
    assert d["design"] == "pingpong" and len(d["events"]) == 3 + 3 * 2 * 2
    kinds = {e["kind"] for e in d["events"]}
    assert kinds == {"load", "mma", "softmax"}
    art = t.ascii(40)
    rows = art.splitlines()
    assert rows[0].startswith("TMA") and "0" in rows[1] and "1" in rows[1] and "s" in rows[2]
    assert all(len(r) == len(rows[0]) for r in rows[:4])


def test_events_respect_units():
    t = pl.simulate("pingpong", tiles=6, load=700, mma=1000, softmax=900, stages=2)
    for unit in ("load", "tc", "wg0", "wg1"):
        ev = sorted((e for e in t.events if e.unit == unit), key=lambda e: e.start)
        for a, b in zip(ev, ev[1:]):
            assert b.start >= a.end - 1e-9  # one operation at a time per unit
    loads = {e.tile: e for e in t.events if e.kind == "load"}
    for e in t.events:
        if e.kind == "mma":
            assert e.start >= loads[e.tile].end  # the full barrier


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(pl.DESIGNS), st.integers(1, 12), times, times.map(lambda x: x + 1), times, st.integers(1, 5))
def test_utilisation_at_most_one_and_stages_never_slower(design, tiles, load, mma, softmax, stages):
    a = pl.simulate(design, tiles, load, mma, softmax, stages)
    b = pl.simulate(design, tiles, load, mma, softmax, stages + 1)
    assert 0 < a.tensor_utilisation <= 1 + 1e-12
    assert b.makespan <= a.makespan + 1e-6
    assert a.tc_busy == pytest.approx(tiles * 2 * mma)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 10), times, times.map(lambda x: x + 1), times, st.integers(1, 4))
def test_designs_ordered(tiles, load, mma, softmax, stages):
    c = pl.compare(tiles, load, mma, softmax, stages)
    assert c["ring"].makespan <= c["serial"].makespan + 1e-6
    assert c["pingpong"].makespan <= c["ring"].makespan + 1e-6


def test_attention_tile_times():
    t = pl.attention_tile_times(128, 128, 64, "bf16", hit_rate=0.0, gpu="h100-sxm")
    assert t.mma == 1024 and t.softmax == 512 and t.kv_tile_bytes == 65536
    assert t.load == pytest.approx(65536 / (3.35e12 / 132 / 1.83e9))
    assert pl.attention_tile_times(hit_rate=0.75, gpu="h100-sxm").load == pytest.approx(t.load / 4)


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda: pl.simulate("magic"), "design must be one of"),
        (lambda: pl.simulate("ring", tiles=0), "tiles must be an integer >= 1, got 0"),
        (lambda: pl.simulate("ring", load=-1), "load must be a finite time >= 0"),
        (lambda: pl.simulate("ring", mma=0), "mma must be > 0 cycles"),
        (lambda: pl.simulate("ring", stages=0), "stages must be an integer >= 1, got 0"),
        (lambda: pl.attention_tile_times(hit_rate=2), "hit_rate must be a number in"),
    ],
)
def test_bad_input(call, text):
    with pytest.raises(InputError, match=text):
        call()
