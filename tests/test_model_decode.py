"""Decode: fragment fill, split-KV, the decode GEMM's roofline (tilewise.model.decode)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilewise.errors import InputError
from tilewise.model import decode as dc


def test_fragment_fill_article():
    assert dc.fragment_fill(1, 16) == 1 / 16  # ~6%
    assert dc.fragment_fill(64, 16) == 1.0
    assert dc.fragment_fill(16, 64) == 0.25  # wgmma pads to 64
    assert dc.mma_granularity("mma.sync") == 16 and dc.mma_granularity("wgmma") == 64


@given(st.integers(1, 1000), st.sampled_from([16, 64]))
def test_fill_bounds(m, g):
    f = dc.fragment_fill(m, g)
    assert 0 < f <= 1
    assert (f == 1) == (m % g == 0)


def test_batch_64_still_memory_bound():
    p = dc.decode_gemm_point(64, 8192, 24576, "bf16", "h100-sxm")
    assert p.fill_mma == 1.0
    assert 60 < p.intensity < 64.01 and round(p.intensity) == 63  # ~64 FLOP/B
    assert p.bound == "memory" and p.tensor_utilisation < 0.25
    assert dc.decode_gemm_point(64, 8192, 24576, gpu="h200").bound == "memory"
    assert dc.decode_gemm_point(1, 8192, 24576).intensity == pytest.approx(1.0, rel=1e-3)  # GEMV ~1 FLOP/B


def test_batch_for_compute_bound():
    b = dc.batch_for_compute_bound(8192, 24576, "bf16", "h100-sxm")
    assert dc.decode_gemm_point(b, 8192, 24576, gpu="h100-sxm").bound == "compute"
    assert dc.decode_gemm_point(b - 1, 8192, 24576, gpu="h100-sxm").bound == "memory"
    assert 295 < b < 330


def test_roofline_monotone():
    pts = dc.decode_gemm_roofline()
    assert all(a.intensity < b.intensity for a, b in zip(pts, pts[1:]))
    assert all(0 < p.tensor_utilisation <= 1 for p in pts)


def test_choose_num_splits_rule():
    # Few work items: split until the SMs are full.
    assert dc.choose_num_splits(1, 8, 32768, 132) == 16
    plan = dc.split_plan(1, 8, 32768, 132)
    assert plan.candidates[15].work_items == 128 and plan.efficiency > 0.95
    # Plenty of work: no split.
    assert dc.choose_num_splits(128, 8, 4096, 132) == 1
    # Short sequence: a split keeps at least 4 KV blocks.
    assert dc.choose_num_splits(1, 1, 256, 132) == 1
    assert dc.choose_num_splits(1, 1, 1024, 132, block_n=64) == 4
    assert dc.choose_num_splits(1, 8, 32768, 132, max_splits=4) == 4


@given(st.integers(1, 64), st.integers(1, 16), st.integers(1, 70000), st.sampled_from([78, 114, 132]))
def test_choose_num_splits_properties(batch, kv_heads, seq_len, sms):
    plan = dc.split_plan(batch, kv_heads, seq_len, sms)
    s = plan.splits
    assert 1 <= s <= 64
    assert s == 1 or -(-seq_len // 64) // s >= dc.MIN_BLOCKS_PER_SPLIT
    assert 0 < plan.efficiency <= 1
    assert plan.efficiency >= dc.SPLIT_TOLERANCE * plan.best_efficiency - 1e-9
    assert plan.efficiency >= plan.candidates[0].efficiency - 1e-12  # never worse than not splitting


def test_decode_attention_gqa():
    a = dc.decode_attention(8, 32, 8, 8192, 128)
    assert a.group == 4 and a.bound == "memory"
    assert a.intensity == pytest.approx(4, rel=0.01)  # M = group size
    assert a.fill_mma == 0.25 and a.fill_wgmma == 4 / 64


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda: dc.choose_num_splits(0, 8, 1024, 132), "batch must be an integer >= 1, got 0"),
        (lambda: dc.choose_num_splits(1, 8, 1024, 0), "sms must be an integer >= 1, got 0"),
        (lambda: dc.choose_num_splits(1, 8, 1024, 132, block_n=-64), "block_n must be an integer >= 1, got -64"),
        (lambda: dc.decode_attention(1, 32, 5, 128), "heads must be a multiple of kv_heads"),
        (lambda: dc.mma_granularity("tcgen05"), "instruction must be one of"),
        (lambda: dc.decode_gemm_point(64, 0, 10), "k must be an integer >= 1, got 0"),
    ],
)
def test_bad_input(call, text):
    with pytest.raises(InputError, match=text):
        call()


def test_decode_merge_cost_and_choice():
    """The merge's cost (predict.decode_merge_s): nothing for one split; the second launch pays a launch and
    runs once, whatever the program count; the in-launch merge pays a counter per program on the busiest SM,
    so it loses under a CUDA graph once the SMs run thousands of split programs, and wins at one generation
    and eagerly, where the host's second launch is the longer part of the step."""
    from tilewise.model import predict as pr

    m = pr.machine("h200")
    assert pr.decode_merge_s(m, "inline", 8, 8, 4, 1, 128, 3, 1) == 0.0
    few = pr.decode_merge_s(m, "inline", 1, 8, 4, 16, 128, 1, 1)  # 128 programs: one per SM
    some = pr.decode_merge_s(m, "inline", 8, 8, 4, 16, 128, 8, 1)  # 1,024 programs: 8 on the busiest SM
    many = pr.decode_merge_s(m, "inline", 64, 8, 4, 16, 128, 62, 2)  # 8,192 programs: 63 on the busiest SM
    assert many - some == pytest.approx(55 * pr.DECODE_INLINE_PROGRAM_S, rel=1e-9)
    launch = pr.decode_merge_s(m, "launch", 1, 8, 4, 16, 128, 1, 1)
    assert few < launch
    assert pr.decode_merge_s(m, "launch", 64, 8, 4, 16, 128, 62, 2) < many
    with pytest.raises(InputError, match="merge must be one of"):
        pr.decode_merge_s(m, "later", 8, 8, 4, 4, 128, 1, 1)
    p = {"batch": 1, "heads": 32, "kv_heads": 8, "seq_len": 1024, "head_dim": 128, "dtype": "bf16"}
    c = {"block_n": 64, "num_warps": 4, "num_stages": 3, "num_splits": 16}
    assert pr.decode_merge(p, c, graph=False) == "inline"  # a 6 us step: the host's second launch would cost more
    assert pr.decode_merge(p, c, graph=True) == "inline"  # 128 programs: the launch's fill costs more
    # 64 splits of B8 Hq32 Hkv8 on 32-key tiles, 4,096 programs (measured on the H200 in a CUDA graph, ragged
    # lengths 1k-32k: inline 193.1 us, launch 180.7 us)
    many_p = {**p, "batch": 8, "seq_len": 32768}
    assert pr.decode_merge(many_p, {**c, "block_n": 32, "num_stages": 2, "num_splits": 64}, graph=True) == "launch"
    assert pr.decode_merge(p, {**c, "num_splits": 1}) == "inline"
    t = {g: pr.predict("decode", p, {**c, "merge": g}).ms for g in pr.DECODE_MERGES}
    assert pr.decode_merge(p, c, graph=True) == min(t, key=t.get)


def test_ragged_lengths_price_the_keys_there_are():
    """`total_keys` (the keys of every sequence): the bytes and the splits with keys follow it, the longest
    sequence still streams its full chunk; 32 sequences of 1k-64k keys (1,064,960 in all) measured 1.16-1.19 ms
    on the H200 at one split of 128-key tiles; priced as 32 full 64k sequences the model said 2.05 ms. The model
    knows the total and the longest length, not how the lengths spread: it prices the step 0.98 ms, the K/V at the
    sustained bandwidth, where the few long sequences streaming alone at the end made it 1.2 ms."""
    from tilewise.model import predict as pr

    p = {"batch": 32, "heads": 32, "kv_heads": 8, "seq_len": 65536, "head_dim": 128, "dtype": "bf16"}
    c = {"block_n": 128, "num_warps": 4, "num_stages": 3, "num_splits": 1}
    full = pr.predict("decode", p, c)
    ragged = pr.predict("decode", {**p, "total_keys": 1064960}, c)
    assert ragged.ms < 0.7 * full.ms
    assert ragged.detail["hbm_bytes"] == 2 * 8 * 1064960 * 128 * 2
    assert 0.8 < ragged.ms < 1.4
    assert pr.predict("decode", {**p, "total_keys": 32 * 65536}, c).ms == full.ms  # every sequence full
    one = {**p, "batch": 1, "seq_len": 65536}
    assert pr.predict("decode", {**one, "total_keys": 65536}, c).ms == pr.predict("decode", one, c).ms
    for bad in (0, 32 * 65536 + 1, 1.5):
        with pytest.raises(InputError, match="total_keys must be"):
            pr.predict("decode", {**p, "total_keys": bad}, c)
