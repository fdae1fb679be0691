"""Waves, persistent schedules and the grouped GEMM's costs (tilewise.model.waves)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilewise.errors import InputError
from tilewise.model import waves as wv


def test_article_waves_unchanged():
    w = wv.grid_waves(192, 132)
    assert round(w.waves, 2) == 1.45 and w.tail_blocks == 60
    assert w.efficiency == pytest.approx(192 / 264)


def test_persistent_schedule():
    p = wv.persistent_schedule(192, 132)
    assert p.programs == 132 and p.max_tiles_per_program == 2 and p.min_tiles_per_program == 1
    assert wv.persistent_schedule(50, 132).programs == 50
    assert sum(len(wv.persistent_tiles(192, 132, i)) for i in range(132)) == 192


@given(st.integers(1, 5000), st.integers(1, 200))
def test_persistent_efficiency_bounds(tiles, sms):
    p = wv.persistent_schedule(tiles, sms)
    assert 0 < p.efficiency <= 1
    assert p.max_tiles_per_program - p.min_tiles_per_program <= 1


def test_tile_cost_short_k_loop_has_large_share():
    long = wv.tile_cost(64, 128, 8192)
    short = wv.tile_cost(64, 128, 128)
    assert long.k_steps == 128 and short.k_steps == 2
    assert short.share > 0.3 > 0.05 > long.share


@given(st.integers(1, 64))
def test_share_falls_with_k(steps):
    a = wv.tile_cost(64, 128, 64 * steps)
    b = wv.tile_cost(64, 128, 64 * (steps + 1))
    assert b.share < a.share
    assert 0 < a.share < 1


def test_grouped_gemm_cost_reuses_schedule():
    rows = [32] * 64
    c = wv.grouped_gemm_cost(rows, 128, 2048, block_m=64, block_n=128)
    s = wv.grouped_schedule(rows, 64, 2048, 128)
    assert c.schedule == s and c.schedule.total_tiles == 64 * 16
    assert c.m_fill == 0.5 and c.wgmma_fill == 0.5
    assert c.overhead_share_persistent < c.overhead_share_per_launch
    assert wv.tile_owner(s.prefix, 17) == (1, 1)


def test_grouped_gemm_empty_experts():
    c = wv.grouped_gemm_cost([0, 100, 0, 28], 256, 256)
    assert c.rows == 128 and c.schedule.m_tiles == (0, 2, 0, 1)


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda: wv.persistent_schedule(0, 132), "total_tiles must be an integer >= 1, got 0"),
        (lambda: wv.tile_cost(64, 128, 0), "k must be an integer >= 1, got 0"),
        (lambda: wv.tile_cost(64, 128, 64, b_hit_rate=1.5), "b_hit_rate must be a number in"),
        (lambda: wv.grouped_gemm_cost([0, 0], 64, 64), "rows_per_expert must route at least one row"),
        (lambda: wv.grouped_gemm_cost([-1], 64, 64), "rows per expert must be an integer >= 0, got -1"),
    ],
)
def test_bad_input(call, text):
    with pytest.raises(InputError, match=text):
        call()


# ----------------------------------------------------------------- stream-K


@pytest.mark.parametrize(
    "tiles_m,tiles_n,k_steps",
    [(1, 16, 224), (3, 24, 64), (5, 43, 64), (24, 4, 32), (64, 32, 128), (1, 1, 1), (2, 1, 3), (8, 4, 16), (66, 3, 7)],
)
def test_stream_k_deal_covers_every_step_once_and_pairs_each_partial_with_its_owner(tiles_m, tiles_n, k_steps):
    sk = wv.stream_k_split(tiles_m, tiles_n, k_steps, 132)
    assert sk.grid <= 132 and sk.lanes == tiles_m
    segs = wv.stream_k_segments(sk)
    seen: dict = {}
    for cta, mine in enumerate(segs):
        for i, s in enumerate(mine):
            assert s.cta == cta and s.tile[0] == cta // sk.per_lane  # a lane is one row of tiles
            for k in range(s.k0, s.k1):
                seen[(s.tile, k)] = seen.get((s.tile, k), 0) + 1
            if s.role == "partial":
                assert i == 0, "a partial is the first thing its CTA runs, so no owner waits on a waiting CTA"
    assert len(seen) == tiles_m * tiles_n * k_steps and set(seen.values()) == {1}
    owners = {s.tile: s for mine in segs for s in mine if s.role == "owner"}
    for mine in segs:
        for s in mine:
            if s.role == "partial":
                assert s.cta in owners[s.tile].partners
    assert sorted(c for o in owners.values() for c in o.partners) == sorted(
        s.cta for mine in segs for s in mine if s.role == "partial"
    )


def test_stream_k_split_balances_and_refuses_more_rows_than_sms():
    sk = wv.stream_k_split(3, 24, 64, 132)  # 384 x 6144 in 128 x 256 tiles: 72 tiles on 72 SMs data-parallel
    assert (sk.lanes, sk.per_lane, sk.grid) == (3, 44, 132)
    steps = [sk.start(i + 1) - sk.start(i) for i in range(sk.per_lane)]
    assert max(steps) - min(steps) <= 1 and sum(steps) == 24 * 64
    tiny = wv.stream_k_split(1, 1, 6, 132)  # 6 steps: at least STREAM_K_MIN_STEPS each
    assert tiny.grid == 6 // wv.STREAM_K_MIN_STEPS
    with pytest.raises(InputError, match="tiles_m"):
        wv.stream_k_split(133, 1, 1, 132)
    with pytest.raises(InputError, match="k_steps"):
        wv.stream_k_split(1, 1, 0, 132)


def test_stream_k_summary_refuses_bad_sizes_and_declines_more_rows_than_sms():
    assert wv.stream_k_summary(133, 4, 8, 132) is None  # a lane per row: 133 rows do not fit 132 SMs
    for args, name in [((0, 4, 8, 132), "tiles_m"), ((1, 4, 8, 0), "sms"), ((1, 0, 8, 132), "tiles_n"),
                       ((1, 4, 0, 132), "k_steps"), (("2", 4, 8, 132), "tiles_m")]:  # fmt: skip
        with pytest.raises(InputError, match=name):
            wv.stream_k_summary(*args)
