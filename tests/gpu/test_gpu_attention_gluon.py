"""FA3 in Gluon (tilewise.kernels.attention_gluon) on a Hopper GPU, at full size, against float64.

Run on the device: PYTHONPATH=src pytest -m gpu tests/gpu/test_gpu_attention_gluon.py
Every design (serial / ring / pingpong), head dims 64/128/256, causal and not, GQA, Sq != Sk,
lengths that are a multiple of no block, strided (BSHD) inputs; out and lse checked element by
element after the output memory was filled with NaN; fresh seeded inputs per case.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0), reason="needs a Hopper GPU"
    ),
]

# per element |err| <= TOL (1 + |ref|): bf16 keeps 8 mantissa bits (P and the output are rounded to it)
TOL = {torch.bfloat16: 2e-2, torch.float16: 4e-3}
LSE_TOL = 1e-3


def reference64(q, k, v, causal):
    """float64 attention, bottom-right causal alignment; rows that see no key: out 0, lse -inf."""
    B, H, Sq, D = q.shape
    Hk, Sk = k.shape[1], k.shape[2]
    out = torch.empty((B, H, Sq, D), dtype=torch.float64, device=q.device)
    lse = torch.empty((B, H, Sq), dtype=torch.float64, device=q.device)
    i = torch.arange(Sq, device=q.device)[:, None]
    j = torch.arange(Sk, device=q.device)[None, :]
    allowed = j <= i + (Sk - Sq)
    for b in range(B):
        for h in range(H):
            s = (q[b, h].double() @ k[b, h // (H // Hk)].double().T) / math.sqrt(D)
            if causal:
                s = s.masked_fill(~allowed, float("-inf"))
            m = s.amax(-1, keepdim=True)
            has = torch.isfinite(m)
            m0 = torch.where(has, m, torch.zeros_like(m))
            p = torch.exp(s - m0)
            den = p.sum(-1, keepdim=True)
            out[b, h] = torch.where(has, (p @ v[b, h // (H // Hk)].double()) / torch.where(has, den, 1.0), 0.0)
            lse[b, h] = torch.where(has, m0 + torch.log(den), float("-inf"))[:, 0]
    return out, lse


def make(B, H, Hk, Sq, Sk, D, dtype, seed, bshd=False):
    g = torch.Generator(device="cuda").manual_seed(seed)
    if bshd:  # [B, S, H, D] memory: heads strided, still a legal TMA layout
        mk = lambda s, h: torch.randn(B, s, h, D, device="cuda", dtype=dtype, generator=g).transpose(1, 2)  # noqa: E731
    else:
        mk = lambda s, h: torch.randn(B, h, s, D, device="cuda", dtype=dtype, generator=g)  # noqa: E731
    return mk(Sq, H), mk(Sk, Hk), mk(Sk, Hk)


def poison(numel):
    """Fill the caching allocator's next blocks with NaN, so an output element never written shows up."""
    junk = torch.full((numel + 4096,), float("nan"), device="cuda", dtype=torch.float32)
    del junk


def check(out, lse, ro, rl, dtype):
    assert out.shape == ro.shape and lse.shape == rl.shape
    err = (out.double() - ro).abs()
    bad = ~(err <= TOL[dtype] * (1 + ro.abs()))
    assert int(bad.sum()) == 0, f"{int(bad.sum())} output elements off, max err {float(err.nan_to_num(1e9).max())}"
    fin = torch.isfinite(rl)
    assert torch.equal(torch.isneginf(lse), ~fin), "lse must be -inf exactly for the rows that see no key"
    lerr = (lse.double() - rl).abs()[fin]
    assert lerr.numel() == 0 or float(lerr.max()) <= LSE_TOL * (1 + float(rl[fin].abs().max()))


SHAPES = [  # (B, H, Hkv, Sq, Sk)
    (1, 8, 2, 4096 + 37, 4096 + 37),  # full size, GQA 4, not a multiple of any block
    (2, 4, 4, 1000, 1000),
    (1, 8, 8, 127, 300),  # Sq < Sk
    (1, 4, 1, 300, 127),  # Sq > Sk: causal rows 0 .. 172 see no key
    (1, 2, 1, 1, 1),
]


@pytest.mark.parametrize("design", ["pingpong", "ring", "serial"])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_gluon_bf16(design, d, causal, shape):
    from tilewise.kernels.attention_gluon import gluon_attention

    B, H, Hk, Sq, Sk = shape
    q, k, v = make(B, H, Hk, Sq, Sk, d, torch.bfloat16, seed=hash((design, d, causal, shape)) % 2**31)
    poison(B * H * Sq * d)
    out, lse = gluon_attention(q, k, v, causal=causal, design=design)
    ro, rl = reference64(q, k, v, causal)
    check(out, lse, ro, rl, torch.bfloat16)


@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_gluon_fp16_and_dispatch(d, causal):
    """fp16 through the public op: on a verified Triton, D 128/256 run the Gluon kernel, D 64 where `dispatches` says."""
    from tilewise.kernels import attention
    from tilewise.kernels import attention_gluon as ag

    q, k, v = make(2, 8, 4, 1531, 2000, d, torch.float16, seed=7 + d + causal)
    poison(2 * 8 * 1531 * d)
    out, lse = attention(q, k, v, causal=causal)
    ro, rl = reference64(q, k, v, causal)
    check(out, lse, ro, rl, torch.float16)
    import triton

    from tilewise.kernels.utils import long_kernel

    long = long_kernel(q.device, 4.0 * 2 * 8 * 1531 * 2000 * d, (2 * 8 * 1531 + 2 * 4 * 2000) * d * 2, q.dtype)
    expect = triton.__version__ in ag.GLUON_VERIFIED and ag.dispatches(d, 2000, causal) and long
    assert ag.use_gluon(q, k, v, None, causal) == expect


def test_gluon_strided_bshd():
    from tilewise.kernels.attention_gluon import gluon_attention

    q, k, v = make(2, 8, 2, 513, 1031, 128, torch.bfloat16, seed=3, bshd=True)
    assert not q.is_contiguous()
    out, lse = gluon_attention(q, k, v, causal=True)
    ro, rl = reference64(q, k, v, True)
    check(out, lse, ro, rl, torch.bfloat16)


@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("shape", SHAPES + [(3, 6, 2, 2000, 2000)])
@pytest.mark.parametrize("variant", ["lpt", "lpt_noturn", "round_robin"])
def test_gluon_causal_schedules(d, shape, variant):
    """Causal tiles in the host's longest-first table (`lpt_schedule`), with and without the consumers' turn
    order, and the arithmetic round-robin order: every tile is computed once (a tile run twice or never
    shows up against float64 on NaN-poisoned outputs)."""
    import dataclasses

    from tilewise.kernels import attention_gluon as ag

    B, H, Hk, Sq, Sk = shape
    cfg = ag.gluon_config(d, "pingpong")
    cfg = dataclasses.replace(cfg, lpt=variant != "round_robin", pingpong=variant != "lpt_noturn")
    q, k, v = make(B, H, Hk, Sq, Sk, d, torch.bfloat16, seed=hash((d, shape, variant)) % 2**31)
    poison(B * H * Sq * d)
    out, lse = ag.gluon_attention(q, k, v, causal=True, config=cfg)
    ro, rl = reference64(q, k, v, True)
    check(out, lse, ro, rl, torch.bfloat16)


@pytest.mark.parametrize("d", [128, 256])
def test_gluon_causal_schedule_under_graph_capture(d):
    """The table is built on the first call outside the capture; a shape first seen inside a capture runs the
    arithmetic order (no host-to-device copy can be captured). Both replay right with fresh inputs, fp16."""
    import dataclasses

    from tilewise.kernels import attention
    from tilewise.kernels import attention_gluon as ag

    q, k, v = make(2, 8, 2, 1531, 1531, d, torch.float16, seed=11 + d)
    q2, k2, v2 = make(1, 4, 4, 999, 999, d, torch.float16, seed=12 + d)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        attention(q, k, v, causal=True)
        # compile the round-robin build the capture will take for the new shape (no compile inside a capture)
        rr = dataclasses.replace(ag.gluon_config(d, "pingpong", "fp16"), lpt=False)
        ag.gluon_attention(q2, k2, v2, causal=True, config=rr)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out, lse = attention(q, k, v, causal=True)
        out2, lse2 = attention(q2, k2, v2, causal=True)
    for t in (q, k, v, q2, k2, v2):
        t.normal_()
    g.replay()
    torch.cuda.synchronize()
    check(out, lse, *reference64(q, k, v, True), torch.float16)
    check(out2, lse2, *reference64(q2, k2, v2, True), torch.float16)


@pytest.mark.parametrize("d", [128, 256])
@pytest.mark.parametrize("shape", SHAPES)
def test_gluon_non_causal_without_turn_order(d, shape):
    """The two consumers without the turn order (`pingpong=False`: the dispatch's non-causal config from
    TURN_FREE_KEYS keys on) against float64, fp16."""
    import dataclasses

    from tilewise.kernels import attention_gluon as ag

    B, H, Hk, Sq, Sk = shape
    cfg = dataclasses.replace(ag.gluon_config(d, "pingpong", "fp16"), pingpong=False)
    q, k, v = make(B, H, Hk, Sq, Sk, d, torch.float16, seed=hash((d, shape, "noturn")) % 2**31)
    poison(B * H * Sq * d)
    out, lse = ag.gluon_attention(q, k, v, causal=False, config=cfg)
    check(out, lse, *reference64(q, k, v, False), torch.float16)


def test_causal_table_is_built_without_a_synchronizing_call():
    """The first causal call of a shape builds its table on the device; the bench harness warms up under torch's
    sync debug mode "error", so that build must not synchronize (pinned memory, non-blocking copy)."""
    import warnings

    from tilewise.kernels import attention_gluon as ag

    q, k, v = make(1, 16, 16, 8192 + 64, 8192 + 64, 128, torch.bfloat16, seed=21)
    bh, num_m = 16, -(-(8192 + 64) // ag.ROWS_PER_CTA)
    group = ag.head_group(bh, 8192 + 64, 128, 2)
    assert ag.use_lpt(bh, num_m, group, 8192 + 64, 8192 + 64, 128, min(132, bh * num_m), True)
    ag.gluon_attention(q[:, :, :64], k, v, causal=True)  # compile first (compiling may synchronize)
    prev = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        torch.cuda.set_sync_debug_mode("error")
    try:
        out, lse = ag.gluon_attention(q, k, v, causal=True)
    finally:
        torch.cuda.set_sync_debug_mode(prev)
    check(out, lse, *reference64(q, k, v, True), torch.bfloat16)


# (head_dim, consumers, q_bufs, xtile) beside the defaults; xtile: the overlapped loop run across CTA tiles
BUILDS = [(64, 3, 1, False), (64, 3, 2, False), (64, 2, 2, False), (128, 2, 2, False), (128, 2, 2, True),
          (128, 2, 1, True), (64, 3, 2, True), (64, 2, 2, True), (256, 2, 1, True)]  # fmt: skip


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("turn", [True, False])
@pytest.mark.parametrize("shape", SHAPES + [(3, 6, 2, 2000, 2000)])
def test_gluon_consumers_and_q_buffers(build, causal, turn, shape):
    """Three consumer warpgroups (192-row CTA tiles, the turn passed round 0 -> 1 -> 2), two Q buffers per
    consumer (the next CTA tile's Q loads during this one's last K/V tiles) and the overlapped loop run across CTA
    tiles, with and without the turn order, causal in the longest-first table (tiles without keys between tiles
    with keys: Sq > Sk): every element against float64 on NaN-poisoned outputs, fp16 and bf16."""
    import dataclasses

    from tilewise.kernels import attention_gluon as ag

    d, consumers, q_bufs, xtile = build
    dtype = torch.float16 if causal else torch.bfloat16
    cfg = ag.gluon_config(d, "pingpong", "fp16" if causal else "bf16", consumers=consumers, q_bufs=q_bufs, xtile=xtile)
    assert cfg.rows_per_cta == 64 * consumers
    cfg = dataclasses.replace(cfg, pingpong=turn)
    B, H, Hk, Sq, Sk = shape
    q, k, v = make(B, H, Hk, Sq, Sk, d, dtype, seed=hash((build, causal, turn, shape)) % 2**31)
    poison(B * H * Sq * d)
    out, lse = ag.gluon_attention(q, k, v, causal=causal, config=cfg)
    check(out, lse, *reference64(q, k, v, causal), dtype)


@pytest.mark.parametrize("build", BUILDS)
def test_gluon_builds_under_graph_capture(build):
    """Each build replays right from a CUDA graph with fresh inputs (causal, the arithmetic order: a shape first
    seen inside a capture has no table)."""
    import dataclasses

    from tilewise.kernels import attention_gluon as ag

    d, consumers, q_bufs, xtile = build
    cfg = ag.gluon_config(d, "pingpong", "bf16", consumers=consumers, q_bufs=q_bufs, xtile=xtile)
    cfg = dataclasses.replace(cfg, lpt=False)
    q, k, v = make(2, 8, 2, 777, 777, d, torch.bfloat16, seed=31 + d + consumers + q_bufs + xtile)
    ag.gluon_attention(q, k, v, causal=True, config=cfg)  # compile outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out, lse = ag.gluon_attention(q, k, v, causal=True, config=cfg)
    for t in (q, k, v):
        t.normal_()
    g.replay()
    torch.cuda.synchronize()
    check(out, lse, *reference64(q, k, v, True), torch.bfloat16)


@pytest.mark.parametrize("d, store_bytes", [(64, 4), (64, 8), (64, 16), (128, 4), (128, 8), (128, 16), (256, 4),
                                            (256, 8), (256, 16)])  # fmt: skip
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_gluon_output_store_widths(d, store_bytes, causal, shape):
    """Each way the epilogue stores O (4: the wgmma layout's pairs; 8: warp shuffles to 4 elements a thread; 16:
    stmatrix to 8 elements a thread, the default) writes every element and only the rows below Sq: NaN-poisoned
    outputs against float64."""
    import dataclasses

    from tilewise.kernels import attention_gluon as ag

    dtype = torch.bfloat16 if causal else torch.float16
    cfg = dataclasses.replace(ag.gluon_config(d, "pingpong", "bf16" if causal else "fp16"), store_bytes=store_bytes)
    B, H, Hk, Sq, Sk = shape
    q, k, v = make(B, H, Hk, Sq, Sk, d, dtype, seed=hash((d, store_bytes, causal, shape)) % 2**31)
    poison(B * H * Sq * d)
    out, lse = ag.gluon_attention(q, k, v, causal=causal, config=cfg)
    check(out, lse, *reference64(q, k, v, causal), dtype)
