"""The Tensor-Core feed and register derivations as oracles (tilewise.model.tensorcore)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilewise import gpus
from tilewise.errors import InputError
from tilewise.model import tensorcore as tc


def test_wgmma_flops_and_cycles():
    w = tc.wgmma(128, "bf16", "h100-sxm")
    assert (w.m, w.n, w.k) == (64, 128, 16)
    assert w.flops == 2 * 64 * 128 * 16
    assert w.flops_per_cycle_per_sm == 4096
    assert w.cycles == 64  # 0.5 N
    assert tc.wgmma(64, "fp8").k == 32
    assert tc.wgmma(64, "tf32").k == 8


def test_sm_rate_and_peak():
    d = tc.sm_flops_per_cycle("h100-sxm", "bf16")
    assert d["flops_per_cycle_per_sm"] == 4096 == 4 * 512 * 2
    assert d["macs_per_tensor_core_per_cycle"] == 512
    assert d["peak_tflops"] == pytest.approx(4096 * 132 * 1.83e9 / 1e12)
    assert round(d["peak_tflops"], 1) == 989.4
    assert "989.4 TFLOPS" in d["formula"]


def test_feed_seed_numbers():
    f64 = tc.smem_feed(64)
    assert f64.a_bytes == 2048 and f64.a_cycles == 16
    assert f64.b_cycles == pytest.approx(0.25 * 64)
    assert f64.compute_cycles == pytest.approx(0.5 * 64)
    assert f64.break_even_n == 64
    ratios = [round(x.ratio, 2) for x in tc.feed_table((64, 128, 256))]
    assert ratios == [1.00, 1.33, 1.60]
    assert f64.limit_ratio == 2
    assert f64.keeps_up and not tc.smem_feed(56).keeps_up


def test_feed_rs_removes_a():
    for n in (8, 64, 256):
        f = tc.smem_feed(n, form="RS")
        assert f.a_cycles == 0 and f.ratio == pytest.approx(2.0)


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp8", "tf32"])
def test_break_even_same_for_all_types(dtype):
    # Every type's wgmma reads 32 bytes of K per row, so the break-even is N = 64 for all.
    assert tc.smem_feed(64, dtype).break_even_n == pytest.approx(64)


@given(st.integers(1, 32).map(lambda i: 8 * i))
def test_feed_ratio_monotone_and_below_limit(n):
    f = tc.smem_feed(n)
    assert f.ratio < f.limit_ratio
    if n < 256:
        assert tc.smem_feed(n + 8).ratio > f.ratio


def test_register_budget_seed():
    r = tc.register_budget(head_dim=128, block_n=128)
    assert r.s == 64 and r.o == 64 and r.p == 32 and r.stats == 4
    assert r.fits and r.limit == 255
    r256 = tc.register_budget(head_dim=128, block_n=256)
    assert r256.s == 128  # N/2
    assert r256.accumulators == 192  # 128 + 64 = 192 of 255
    assert not r256.fits
    assert 128 <= r.max_n < 256 and r.max_n_pow2 == 128


@given(st.integers(1, 16).map(lambda i: 16 * i), st.sampled_from([64, 128, 256]))
def test_registers_grow_with_n_and_d(n, d):
    a = tc.register_budget(d, n)
    assert a.s == n / 2 and a.o == d / 2
    if n < 256:
        assert tc.register_budget(d, n + 16).total > a.total
    assert a.fits == (n <= a.max_n)


def test_setmaxnreg_split():
    s = tc.setmaxnreg_split()
    assert s["threads"] == 384 and s["even_split"] == 170 and s["consumer_regs"] == 240


def test_smem_budget_and_depth():
    s = tc.smem_budget(128, 128, 64, stages=2)
    assert s.q_bytes == 128 * 128 * 2 and s.kv_stage_bytes == 2 * 128 * 128 * 2
    assert s.total_bytes == 160 * 1024 and s.limit_bytes == 227 * 1024 and s.fits
    assert s.max_stages == 3
    assert not tc.smem_budget(128, 128, 64, stages=4).fits


def test_attention_tile_budget_dict():
    b = tc.attention_tile_budget(128, 128)
    assert set(b) >= {"registers", "smem", "fits"}
    assert b["fits"] is True
    assert b["registers"]["limit"] == 255 and b["smem"]["limit_bytes"] == gpus.get("h100").smem_per_block_optin
    assert tc.attention_tile_budget(128, 256)["fits"] is False
    assert tc.attention_tile_budget(128, 128, stages=4)["fits"] is False
    # A Triton-style block: 4 warps owning 128 rows.
    t = tc.attention_tile_budget(64, 64, block_m=128, consumers=1)
    assert t["registers"]["s"] == 64 and t["smem"]["q_rows"] == 128


@given(st.integers(1, 8))
def test_more_stages_more_smem(stages):
    a = tc.smem_budget(128, 128, stages=stages)
    b = tc.smem_budget(128, 128, stages=stages + 1)
    assert b.total_bytes > a.total_bytes
    assert a.fits == (stages <= a.max_stages)


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda: tc.wgmma(100), "N must be a multiple of 8"),
        (lambda: tc.wgmma(264), "N must be an integer <= 256"),
        (lambda: tc.wgmma(128, "int4"), "dtype must be one of"),
        (lambda: tc.wgmma(128, gpu="a100"), "wgmma"),
        (lambda: tc.smem_feed(64, form="XX"), "form must be 'SS'"),
        (lambda: tc.register_budget(0, 128), "head_dim must be an integer >= 1, got 0"),
        (lambda: tc.attention_tile_budget(128, 128, stages=0), "stages must be an integer >= 1, got 0"),
        (lambda: tc.attention_tile_budget(128, 128, gpu="h999"), "unknown GPU 'h999'"),
    ],
)
def test_bad_input(call, text):
    with pytest.raises(InputError, match=text):
        call()


def test_published_vs_modelled_named():
    assert any("not published" in v for v in tc.MODELLED.values())
    assert not set(tc.PUBLISHED) & set(tc.MODELLED), "a figure is either published or modelled"
    # every published figure names a document a reader can open
    for fact, source in tc.PUBLISHED.items():
        assert any(doc in source for doc in ("PTX ISA", "CUDA C++ Programming Guide", "whitepaper")), (fact, source)
    # and the numbers it states are the registry's
    h = gpus.get("h100-sxm")
    regs = next(k for k in tc.PUBLISHED if k.startswith("registers"))
    assert f"{h.max_regs_per_thread} per thread" in regs and f"{h.regs_per_sm:,} per SM" in regs
    smem = next(k for k in tc.PUBLISHED if k.startswith("shared memory"))
    assert f"{h.smem_per_block_optin // 1024} KB per block" in smem and f"{h.smem_per_sm // 1024} KB per SM" in smem
    banks = next(k for k in tc.PUBLISHED if "banks" in k)
    assert f"{h.smem_bytes_per_cycle_per_sm} B/cycle" in banks
    wg = next(k for k in tc.PUBLISHED if k.startswith("wgmma shapes"))
    assert "N = 8..256 step 8" in wg and tc.wgmma_shapes("bf16")[-1][1] == 256


def test_wgmma_shapes():
    shapes = tc.wgmma_shapes("bf16")
    assert shapes[0] == (64, 8, 16) and shapes[-1] == (64, 256, 16) and len(shapes) == 32
    assert {k for _, _, k in tc.wgmma_shapes("fp8")} == {32}
