"""Dispatch between the Gluon FA3 kernel and the Triton kernel, and the Gluon config rules (CPU only).

`tilewise.kernels.attention` takes the Gluon kernel only on a Hopper GPU, on a Triton version the
GPU tests passed on, for fp16/bf16, head dims 64/128/256, a positive scale and TMA-legal layouts;
any failure of it falls back to the Triton kernel with the same results.
"""

from __future__ import annotations

import math

import pytest
from helpers import interpreting

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from tilewise.kernels import attention_gluon as ag  # noqa: E402
from tilewise.kernels import flash_attention as fa  # noqa: E402
from tilewise.kernels import utils  # noqa: E402


class FakeCuda:
    """Just what `use_gluon` reads of a tensor: a CUDA bf16 [B, H, S, D] tensor on device 0 (by default one long
    enough for `long_kernel`: 4 x 32 x 4096^2 x 128 FLOPs)."""

    def __init__(self, shape=(1, 32, 4096, 128), dtype=torch.bfloat16, strides=None, ptr=1 << 20, esize=2):
        self.shape = shape
        self.dtype = dtype
        self.is_cuda = True
        self.device = torch.device("cuda", 0)
        B, H, S, D = shape
        self._strides = strides or (H * S * D, S * D, D, 1)
        self._ptr = ptr
        self._esize = esize

    def stride(self, i):
        return self._strides[i]

    def data_ptr(self):
        return self._ptr

    def element_size(self):
        return self._esize


@pytest.fixture
def hopper(monkeypatch):
    """Pretend: device 0 is an sm 9.0 GPU and the installed Triton is a verified one."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TILEWISE_GLUON", raising=False)
    monkeypatch.setattr(ag, "_device_ok", lambda index: True)
    monkeypatch.setattr(ag, "GLUON_VERIFIED", (triton.__version__,))
    monkeypatch.setattr(ag, "_FAILED", [])
    monkeypatch.setattr(utils, "gpu_key", lambda device: "h200")  # the roofline of `long_kernel` on an H200
    return monkeypatch


def test_gluon_taken_on_verified_hopper(hopper):
    if not ag.gluon_available():
        pytest.skip("this Triton lacks the Gluon names the kernel uses")
    t = FakeCuda()
    assert ag.use_gluon(t, t, t, None)
    assert ag.use_gluon(t, t, t, 0.1)
    t256 = FakeCuda(shape=(1, 16, 4096, 256))
    assert ag.use_gluon(t256, t256, t256, None)


def test_unverified_triton_falls_back(hopper):
    hopper.setattr(ag, "GLUON_VERIFIED", ("0.0.0",))
    t = FakeCuda()
    assert not ag.use_gluon(t, t, t, None)


@pytest.mark.parametrize(
    "why,q",
    [
        ("fp32", FakeCuda(dtype=torch.float32, esize=4)),
        ("head dim 32", FakeCuda(shape=(2, 4, 100, 32))),
        ("head dim 16", FakeCuda(shape=(2, 4, 100, 16))),
        ("last dim strided", FakeCuda(strides=(4 * 100 * 256, 100 * 256, 256, 2))),
        ("row stride not 16-byte aligned", FakeCuda(strides=(4 * 100 * 132, 100 * 132, 132 + 1, 1))),
        ("base not 16-byte aligned", FakeCuda(ptr=(1 << 20) + 8)),
    ],
)
def test_unsupported_inputs_fall_back(hopper, why, q):
    k = FakeCuda(shape=q.shape)
    assert not ag.use_gluon(q, k, k, None), why


def test_head_dim_64_by_length_and_mask(hopper):
    """D 64 takes the Gluon kernel where it measured faster than the Triton one: every non-causal length, causal
    from D64_MIN_KEYS keys (three consumers from THREE_CONSUMER_KEYS, with 192-row CTA tiles)."""
    if not ag.gluon_available():
        pytest.skip("this Triton lacks the Gluon names the kernel uses")
    q = FakeCuda(shape=(2, 32, 4096, 64))
    short = FakeCuda(shape=(2, 32, 2048, 64))
    long = FakeCuda(shape=(2, 32, ag.D64_MIN_KEYS[True], 64))
    assert ag.use_gluon(q, short, short, None, causal=False)
    assert not ag.use_gluon(q, short, short, None, causal=True)
    assert ag.use_gluon(q, long, long, None, causal=True)
    low = ag.D64_MIN_KEYS[True]
    assert ag.dispatches(64, low, True) and not ag.dispatches(64, low - 1, True) and ag.dispatches(128, 1, True)
    assert ag.shape_consumers(64, ag.THREE_CONSUMER_KEYS[False], False) == 3
    assert ag.shape_consumers(64, ag.THREE_CONSUMER_KEYS[False] - 1, False) == 2
    assert ag.shape_consumers(128, 1 << 20, False) == 2
    assert ag.cta_rows(64, 8192, True) == 192
    cfg = ag.shape_config(64, "bf16", 64, 8192, 8192, True, 132, 4)
    assert cfg.consumers == 3 and not cfg.pingpong  # three consumers run without the turn order
    assert ag.shape_config(128, "bf16", 512, 512, 512, False, 132, 96).pingpong is False
    assert ag.shape_config(128, "bf16", 512, 512, 512, True, 132, 96).pingpong is True
    # short causal rows group only the heads one round of the grid covers
    assert ag.dispatch_group(128, 2048, 2048, 128, 2, True, 132) == 132 // 16
    assert ag.dispatch_group(512, 1024, 1024, 128, 2, True, 132, 8) == ag.head_group(512, 1024, 128, 2)
    assert ag.dispatch_group(128, 2048, 2048, 128, 2, False, 132) == ag.head_group(128, 2048, 128, 2)
    assert ag.dispatch_group(128, 4096, 4096, 128, 2, True, 132) == ag.head_group(128, 4096, 128, 2)


def test_short_kernels_keep_the_triton_kernel(hopper):
    """A kernel the roofline puts under DESC_MIN_SECONDS stays on the Triton kernel, whose host launch is shorter
    (B1 H2 S64 D64: the Gluon launch cost the host 36.6 us a call, the Triton one ~20)."""
    if not ag.gluon_available():
        pytest.skip("this Triton lacks the Gluon names the kernel uses")
    tiny = FakeCuda(shape=(1, 2, 64, 64))
    assert not ag.use_gluon(tiny, tiny, tiny, None)
    assert ag.use_gluon(FakeCuda(), FakeCuda(), FakeCuda(), None)


def test_scale_and_switches(hopper):
    t = FakeCuda()
    assert not ag.use_gluon(t, t, t, -0.5)  # the unmasked softmax multiplies the row max by the scale
    assert not ag.use_gluon(t, t, t, 0.0)
    hopper.setenv("TILEWISE_GLUON", "0")
    assert not ag.use_gluon(t, t, t, None)
    hopper.delenv("TILEWISE_GLUON")
    hopper.setenv("TRITON_INTERPRET", "1")
    assert not ag.use_gluon(t, t, t, None)


def test_cpu_tensors_never_take_gluon(hopper):
    q = torch.zeros(1, 2, 8, 64, dtype=torch.float16)
    assert not ag.use_gluon(q, q, q, None)


def test_after_a_failure_the_gluon_path_is_off(hopper):
    if not ag.gluon_available():
        pytest.skip("this Triton lacks the Gluon names the kernel uses")
    t = FakeCuda()
    assert ag.use_gluon(t, t, t, None)
    with pytest.warns(RuntimeWarning, match="Triton kernel"):
        ag.gluon_failed(RuntimeError("out of resources: shared memory"))
    assert not ag.use_gluon(t, t, t, None)


needs_interpreter = pytest.mark.skipif(not interpreting(), reason="runs the Triton kernel: needs TRITON_INTERPRET=1")


def _ref(q, k, v, causal):
    g = q.shape[1] // k.shape[1]
    k = k.double().repeat_interleave(g, 1)
    v = v.double().repeat_interleave(g, 1)
    s = q.double() @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        i = torch.arange(sq)[:, None]
        j = torch.arange(sk)[None, :]
        s = s.masked_fill(j > i + sk - sq, float("-inf"))
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)


@needs_interpreter
def test_failure_of_gluon_falls_back_to_triton(monkeypatch):
    """A Gluon compile/resource error never reaches the user: the Triton kernel answers (interpreter)."""
    monkeypatch.setattr(ag, "_FAILED", [])
    calls = []

    def boom(*a, **kw):
        calls.append(1)
        raise RuntimeError("out of resources: Required: 262144, Hardware limit: 232448")

    monkeypatch.setattr(fa, "use_gluon", lambda *a: True)
    monkeypatch.setattr(fa, "gluon_attention", boom)
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(1, 4, 37, 64, generator=gen).half()
    k = torch.randn(1, 2, 45, 64, generator=gen).half()
    v = torch.randn(1, 2, 45, 64, generator=gen).half()
    with pytest.warns(RuntimeWarning):
        out, lse = fa.attention(q, k, v, causal=True)
    assert calls == [1]
    ro, rl = _ref(q, k, v, True)
    assert (out.double() - ro).abs().max() < 4e-3
    assert (lse.double() - rl).abs().max() < 1e-3


@needs_interpreter
def test_interpreter_never_calls_gluon(monkeypatch):
    monkeypatch.setattr(fa, "gluon_attention", lambda *a, **kw: pytest.fail("Gluon kernel called on the CPU"))
    gen = torch.Generator().manual_seed(6)
    q = torch.randn(1, 2, 33, 64, generator=gen).half()
    out, lse = fa.attention(q, q, q, causal=False)
    ro, rl = _ref(q, q, q, False)
    assert (out.double() - ro).abs().max() < 4e-3


@pytest.mark.parametrize("d", ag.HEAD_DIMS)
@pytest.mark.parametrize("design", ag.DESIGNS)
def test_config_fits_the_model_budgets(d, design):
    """Q + stages x (K, V) stays under the 227 KB a block may opt into; the ring is as deep as that allows."""
    from tilewise.model.tensorcore import register_budget, smem_budget

    cfg = ag.gluon_config(d, design)
    sm = smem_budget(d, cfg.block_n, cfg.rows_per_consumer, cfg.stages, "bf16", "h100-sxm", cfg.consumers)
    assert sm.fits
    assert cfg.rows_per_consumer * cfg.consumers == ag.ROWS_PER_CTA
    if design == "serial":
        assert cfg.stages == 1
    else:
        deeper = smem_budget(d, cfg.block_n, cfg.rows_per_consumer, cfg.stages + 1, "bf16", "h100-sxm", cfg.consumers)
        scratch = ag.store_scratch_bytes(cfg.consumers * cfg.consumer_warps, cfg.store_bytes)
        assert cfg.stages == 4 or deeper.total_bytes > deeper.limit_bytes - 2048 - scratch
    assert register_budget(d, cfg.block_n, 64, "bf16", "h100-sxm", limit=cfg.consumer_regs).fits
    assert (design == "pingpong") == (cfg.pingpong and cfg.consumers == 2)


def test_head_group_fits_l2():
    # B4 H32 S4096 D128 bf16: K+V of one head = 2 MiB; 0.4 x 60 MiB of L2 holds 12 heads
    assert ag.head_group(128, 4096, 128, 2, fraction=0.4) == 12
    assert ag.head_group(128, 4096, 128, 2, fraction=0.1) == 3
    assert ag.head_group(3, 4096, 128, 2) == 3
    assert ag.head_group(8, 10**7, 256, 2) == 1


@pytest.mark.skipif(not ag.gluon_available() or triton.__version__ != "3.6.0", reason="sm_90a build needs triton 3.6")
def test_builds_for_sm90_without_spills():
    r = ag.compile_sm90("pingpong", 128, "bf16", causal=True)
    assert r["stack_bytes"] == 0
    assert r["shared_bytes"] <= 232448
    assert r["asm"]["ptx"].count("setmaxnreg") > 0


def test_output_store_scratch_is_kept_out_of_the_ring():
    """The 16-byte O store's 512 B a consumer warp come out of the ring's room: at D 128 Q (32 KB), the reserve and
    the two consumers' 4 KB leave 2 stages of 64 KB in the 227 KB (the trade measured faster, STORE_BYTES'
    comment), D 64 keeps 4 and D 256 2."""
    for d in ag.HEAD_DIMS:
        for design in ag.DESIGNS:
            cfg = ag.gluon_config(d, design)
            assert cfg.store_bytes == ag.STORE_BYTES == 16
    assert [ag.gluon_config(d, "pingpong").stages for d in (64, 128, 256)] == [4, 2, 2]
    assert ag.store_scratch_bytes(8) == 4096 and ag.store_scratch_bytes(8, 8) == 0
    assert ag.gluon_config(128, "pingpong", q_bufs=2).stages == 2
    assert ag.kernel_constexprs(ag.gluon_config(128, "pingpong"), causal=False)["STORE_BYTES"] == 16


@pytest.mark.skipif(not ag.gluon_available() or triton.__version__ != "3.6.0", reason="sm_90a build needs triton 3.6")
@pytest.mark.parametrize("d", [64, 128, 256])
def test_sm90_build_stores_o_in_the_chosen_width(d):
    """The offline sm_90a build of each head dim's default: O leaves in st.global of the chosen width (v4 = 16 B,
    v2 = 8 B a thread), the shared memory stays under 227 KB, and nothing spills."""
    import re

    cfg = ag.gluon_config(d, "pingpong")
    r = ag.compile_sm90("pingpong", d, "bf16", causal=False)
    ops = [
        re.sub(r"^@!?%p\d+\s+", "", ln.strip()).split()[0] for ln in r["asm"]["ptx"].splitlines() if "st.global" in ln
    ]
    wide = {16: "st.global.v4.b32", 8: "st.global.v2.b32"}[cfg.store_bytes]
    assert ops.count(wide) == cfg.consumers * 64 * d * 2 // (128 * cfg.store_bytes)  # O: 64 x d a consumer
    assert r["shared_bytes"] <= 232448
    assert r["stack_bytes"] == 0 or d == 256  # D 256 keeps a 16-byte frame in every build, the 4-byte store's too


def _cta_loads(sched, nprog, weigh):
    off, tiles = sched[: nprog + 1], sched[nprog + 1 :]
    return [sum(weigh(t) for t in tiles[off[p] : off[p + 1]]) for p in range(nprog)]


@pytest.mark.parametrize(
    "bh, s_q, s_k, d",
    [(16, 32768, 32768, 128), (32, 8192, 8192, 128), (8, 16384, 16384, 256), (3, 1000, 1300, 64), (2, 300, 127, 128),
     (1, 1, 1, 128)],
)  # fmt: skip
def test_lpt_schedule_covers_every_tile_once_and_balances(bh, s_q, s_k, d):
    """Each tile of the persistent order goes to exactly one CTA; the busiest CTA's work (key tiles + the
    per-tile overhead) is within 6% of the mean, where every grid-th tile with the mirrored order leaves
    B1 H16 S32k's busiest CTA 1.5x the mean; a CTA's tiles keep the L2 order (ascending)."""
    nprog = 132
    cfg = ag.gluon_config(d, "pingpong")
    num_m = -(-s_q // ag.ROWS_PER_CTA)
    group = ag.head_group(bh, s_k, d, 2)
    sched = ag.lpt_schedule(bh, num_m, group, s_q, s_k, cfg.block_n, True, nprog)
    total = bh * num_m
    off, tiles = sched[: nprog + 1], sched[nprog + 1 :]
    assert off[0] == 0 and off[-1] == total and all(a <= b for a, b in zip(off, off[1:]))
    assert sorted(tiles) == list(range(total))
    for p in range(nprog):
        seg = tiles[off[p] : off[p + 1]]
        assert list(seg) == sorted(seg)

    def weigh(t):
        return ag.tile_key_tiles(t, bh, num_m, group, s_q, s_k, cfg.block_n, True)[1] + ag.TILE_OVERHEAD

    loads = _cta_loads(sched, nprog, weigh)
    if total >= 4 * nprog:
        assert max(loads) <= 1.06 * sum(loads) / nprog
    rr = [sum(weigh(t) for t in range(p, total, nprog)) for p in range(nprog)]
    assert max(loads) <= max(rr) + 1e-9  # never worse than every grid-th tile


def test_tile_key_tiles_is_the_causal_triangle():
    # S 1000, 128-row CTA tiles, 128-key tiles: the last query tile (rows 896..999) sees all 8 key tiles,
    # the first (rows 0..127) one; Sq 300 > Sk 127 (bottom-right aligned): the first tile sees no key
    assert ag.tile_key_tiles(0, 1, 8, 1, 1000, 1000, 128, True) == (0, 8)
    assert ag.tile_key_tiles(7, 1, 8, 1, 1000, 1000, 128, True) == (0, 1)
    assert ag.tile_key_tiles(2, 1, 3, 1, 300, 127, 128, True) == (0, 0)
    assert ag.tile_key_tiles(5, 2, 8, 2, 1000, 1000, 128, False) == (1, 8)
    assert ag.gluon_config(128, "pingpong").lpt is ag.LPT
    assert ag.kernel_constexprs(ag.gluon_config(128, "pingpong"), causal=False)["TABLE"] is False
    assert ag.kernel_constexprs(ag.gluon_config(128, "pingpong"), causal=True)["TABLE"] is ag.LPT


def test_shape_config_turn_order_and_causal_schedule():
    """The per-problem ping-pong config: the turn order off for non-causal problems of >= TURN_FREE_KEYS[False] keys;
    the table where the arithmetic order leaves the busiest CTA LPT_MIN_GAIN more work (B1 H16 S32768 D128
    causal: 1.5x estimated), not where it is balanced (B16 H32/4 S1024 D128 causal)."""

    def cfg(bh, s, d, causal):
        tiles = bh * -(-s // ag.ROWS_PER_CTA)
        return ag.shape_config(d, "bf16", bh, s, s, causal, min(132, tiles), ag.head_group(bh, s, d, 2))

    assert cfg(16, 32768, 128, True).lpt and cfg(16, 32768, 128, True).pingpong
    assert not cfg(512, 1024, 128, True).lpt
    assert not cfg(16, 32768, 128, False).pingpong and not cfg(16, 32768, 128, False).lpt
    assert cfg(256, 256, 128, False).pingpong and cfg(256, ag.TURN_FREE_KEYS[False] - 1, 256, False).pingpong
    assert not cfg(8, 4096, 256, False).pingpong and not cfg(256, 1024, 128, False).pingpong
    import dataclasses

    base = ag.gluon_config(256, "pingpong")
    assert cfg(8, 4096, 256, False) == dataclasses.replace(base, pingpong=False, lpt=False)


def test_gluon_builds_consumers_and_q_buffers():
    """Three consumers take 192-row CTA tiles and 160 registers a thread (D 64 fits, D 128 does not); a second Q
    buffer per consumer costs K/V stages (D 128: 3 -> 2) and does not fit at D 256 (2 stages need 128 KB)."""
    from tilewise.errors import InputError
    from tilewise.kernels import attention_gluon as ag

    three = ag.gluon_config(64, "pingpong", consumers=3)
    assert (three.consumers, three.rows_per_cta, three.consumer_regs) == (3, 192, 160)
    assert ag.gluon_config(128, "pingpong").rows_per_cta == 128
    assert ag.gluon_config(128, "ring").rows_per_cta == 128
    assert ag.gluon_config(128, "pingpong").stages == 2
    assert ag.gluon_config(128, "pingpong", q_bufs=2).stages == 2
    assert ag.kernel_constexprs(ag.gluon_config(128, "pingpong", q_bufs=2), causal=False)["Q_BUFS"] == 2
    for bad in (
        dict(head_dim=128, consumers=3),
        dict(head_dim=256, q_bufs=2),
        dict(head_dim=64, q_bufs=3),
        dict(head_dim=96),
        dict(head_dim=64, consumers=4),
    ):
        with pytest.raises(InputError):
            ag.gluon_config(bad.pop("head_dim"), "pingpong", **bad)
    with pytest.raises(InputError):
        ag.gluon_config(64, "ring", consumers=3)
    # the host's causal tile lengths follow the CTA's rows: 192-row tiles see 192 more keys each
    assert ag.tile_key_tiles(0, 1, 6, 1, 1000, 1000, 128, True, rows=192) == (0, 8)
    assert ag.tile_key_tiles(5, 1, 6, 1, 1000, 1000, 128, True, rows=192) == (0, 2)
    assert ag.cta_rows(128, 4096, False) == 64 * ag.CONSUMERS[128]


def test_new_build_knobs_refuse_bad_input():
    """The cross-tile loop is ping-pong's; the time model takes 2 or 3 consumers and 1-4 row blocks; a head dim the
    kernel has no tile for is named: each one line of what was expected and what was given."""
    from tilewise.errors import InputError
    from tilewise.model import pipeline

    with pytest.raises(InputError, match="xtile runs the ping-pong design's overlapped loop, got design 'ring'"):
        ag.gluon_config(128, "ring", xtile=True)
    with pytest.raises(InputError, match="consumers"):
        pipeline.persistent_forward_ms(256, 8, 16384, 64, 128, 3, consumers=4)
    with pytest.raises(InputError, match="row_blocks"):
        pipeline.steady_cycles_per_tile("pingpong", 1.0, 1.0, 1.0, 2, row_blocks=0)
    with pytest.raises(InputError, match="head_dim must be one of \\[64, 128, 256\\], got 96"):
        ag.problem_busiest(32, 4096, 96, False)
    assert ag.gluon_config(128, "pingpong", xtile=True).xtile
