"""The Gluon GEMM (tilewise.kernels.gemm_gluon) on the H200: every element against float64, every schedule.

Awkward sizes (1, 7, 127, 1000, 4097 rows; K from 16 to 28672), both B layouts, bias and each activation,
rows that are 16- but not 128-byte aligned, a non-contiguous (sliced) A, CUDA-graph capture, and `matmul`'s
dispatch (the plan names the kernel it ran). Skipped where the Gluon kernel does not run (not Hopper, a
Triton version it was not verified on).
"""

from __future__ import annotations

import pytest
from helpers import assert_close, poisoned

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from matmul_reference import matmul_reference  # noqa: E402

from tilewise.kernels import gemm_gluon  # noqa: E402
from tilewise.kernels.gemm import matmul, matmul_plan  # noqa: E402
from tilewise.kernels.gemm_gluon import GluonGemmConfig, gluon_matmul  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("no_tf32")]
BF, FP16 = torch.bfloat16, torch.float16
RTOL = {BF: 2.0**-7, FP16: 2.0**-10}  # the output's rounding (2 u)

CONFIGS = [
    GluonGemmConfig(128, 256, 64, 3, "cooperative"),
    GluonGemmConfig(128, 128, 64, 4, "pingpong"),
    GluonGemmConfig(64, 128, 64, 6, "single"),
    GluonGemmConfig(128, 256, 64, 4, "cooperative", epilogue_parts=2),  # C stored in two halves
    GluonGemmConfig(192, 128, 64, 4, "cooperative"),  # three consumer warpgroups
    GluonGemmConfig(192, 128, 64, 5, "cooperative", epilogue_parts=2),
]
# stream-K: the last waves' K steps dealt out, tiles summed by several CTAs through fp32 partials
SK_CONFIGS = [
    GluonGemmConfig(128, 256, 64, 3, "cooperative", stream_k=True),
    GluonGemmConfig(192, 128, 64, 4, "cooperative", stream_k=True),
    GluonGemmConfig(128, 128, 64, 4, "cooperative", stream_k=True),
    GluonGemmConfig(64, 256, 64, 4, "single", stream_k=True),
]


def _skip_unless_gluon():
    a = torch.empty(16, 16, device="cuda", dtype=BF)
    why = gemm_gluon.unsupported(a, a, a, None)
    if why:
        pytest.skip(why)


def _check(m, n, k, dtype, cfg, layout="nn", bias=False, act="none", pitch=None, calls=1):
    """pitch: row pitch in elements of A and B (w) when not the packed one (misaligned-rows cases)."""
    _skip_unless_gluon()

    def mat(rows, cols):
        if pitch is None:
            return torch.randn(rows, cols, device="cuda", dtype=dtype)
        return torch.randn(rows, pitch, device="cuda", dtype=dtype)[:, :cols]

    a = mat(m, k)
    b = mat(n, k).t() if layout == "nt" else mat(k, n)
    bb = torch.randn(n, device="cuda", dtype=dtype) if bias else None
    ref = matmul_reference(a, b, bb, act)
    for call in range(calls):  # stream-K: later launches find the flags the earlier ones cleared
        c = poisoned((m, n), dtype, "cuda")
        gluon_matmul(a, b, cfg, out=c, bias=bb, activation=act)
        # inputs are exact in fp32; the fp32 sum differs from float64 by the order of K additions (16 K 2^-24)
        assert_close(c, ref, atol=16 * k * 2.0**-24 + 1e-6, rtol=RTOL[dtype],
                     what=f"{cfg.tag()} {m}x{n}x{k} {layout} call {call}")  # fmt: skip


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.tag())
@pytest.mark.parametrize("m", [1, 7, 127, 1000, 4097])
@pytest.mark.parametrize("layout", ["nn", "nt"])
def test_rows(cfg, m, layout):
    _check(m, 1032, 520, BF, cfg, layout)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.tag())
@pytest.mark.parametrize("k", [16, 72, 4096, 28672])
def test_k(cfg, k):
    _check(300, 264, k, FP16, cfg, "nt")


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.tag())
@pytest.mark.parametrize("act", ["none", "relu", "gelu", "silu"])
def test_bias_activation(cfg, act):
    _check(777, 1000, 328, BF, cfg, "nt", bias=True, act=act)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.tag())
def test_many_tiles_per_cta(cfg):
    """More tiles than CTAs and more K steps than twice the ring: the barriers' phases wrap many times."""
    _check(3000, 2048, 1024, BF, cfg, "nn")


@pytest.mark.parametrize("cfg", CONFIGS[:1], ids=lambda c: c.tag())
@pytest.mark.parametrize("layout", ["nn", "nt"])
def test_rows_16_not_128_byte_aligned(cfg, layout):
    _check(1000, 1000, 1000, BF, cfg, layout, pitch=1000 + 8)  # 2016-byte rows: 16- but not 128-byte aligned


@pytest.mark.parametrize("cfg", SK_CONFIGS, ids=lambda c: c.tag())
@pytest.mark.parametrize(
    "mnk",
    [
        (1, 1000, 64),
        (7, 4096, 4096),
        (127, 1000, 4096),
        (384, 6144, 4096),
        (128, 4096, 14336),
        (1000, 1000, 1000),
        (4097, 1032, 520),
        (3000, 2048, 1024),
        (300, 264, 16),
    ],
    ids=lambda t: "x".join(map(str, t)),
)
@pytest.mark.parametrize("layout", ["nn", "nt"])
def test_stream_k(cfg, mnk, layout):
    """Pure stream-K (fewer tiles than SMs: tiles split over up to 9 CTAs), data-parallel + stream-K (more
    tiles than SMs), K of 1 to 224 steps; three launches each, so the cleared flags are checked too."""
    _check(*mnk, BF, cfg, layout, bias=True, act="gelu", calls=3)


@pytest.mark.parametrize("cfg", SK_CONFIGS[:1], ids=lambda c: c.tag())
def test_stream_k_fp16_misaligned_rows(cfg):
    _check(1000, 1000, 1000, FP16, cfg, "nt", pitch=1000 + 8)


@pytest.mark.parametrize(
    "cfg,m,n,k,replays",
    [(CONFIGS[0], 1000, 3000, 2048, 1), (SK_CONFIGS[0], 256, 6144, 4096, 3)],
    ids=lambda x: x.tag() if isinstance(x, GluonGemmConfig) else None,
)
def test_cuda_graph_capture(cfg, m, n, k, replays):
    """Replays read the new values; stream-K's flags made under capture are zeroed by the graph's own memset,
    so every one of several replays is checked."""
    _skip_unless_gluon()
    a = torch.randn(m, k, device="cuda", dtype=BF)
    w = torch.randn(n, k, device="cuda", dtype=BF)
    out = poisoned((m, n), BF, "cuda")
    gluon_matmul(a, w.t(), cfg, out=out)  # compile outside the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gluon_matmul(a, w.t(), cfg, out=out)
    for _ in range(replays):
        a.copy_(torch.randn_like(a))
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        assert_close(out, a.double() @ w.double().t(), atol=16 * k * 2.0**-24, rtol=RTOL[BF],
                     what=f"{cfg.tag()} graph replay")  # fmt: skip


def test_matmul_dispatches_to_gluon_where_the_model_says():
    """2048^3 nn: the model's Gluon top-1 (gco128x128x64_g8_st6 in the sweep's calibration) is predicted ahead of
    the Triton kernel's, so the plan names the Gluon kernel, and every element of its answer is checked."""
    _skip_unless_gluon()
    from tilewise.kernels import gemm

    n = 2048
    best = gemm._gluon_cached(n, n, n, "bf16", "h200", "nn")
    tcfg = gemm.choose_config(n, n, n, "bf16")
    assert best is not None and best[1] < gemm._triton_ms(tcfg, n, n, n, "bf16", "h200", "nn")
    a = torch.randn(n, n, device="cuda", dtype=BF)
    b = torch.randn(n, n, device="cuda", dtype=BF)
    plan = matmul_plan(a, b)
    assert plan["kernel"] == "gluon" and plan["config"] == best[0].tag(), plan
    c = matmul(a, b)
    assert_close(c, a.double() @ b.double(), atol=16 * n * 2.0**-24, rtol=RTOL[BF], what="dispatched 2048^3")


def test_matmul_non_contiguous_a_falls_back_with_reason():
    _skip_unless_gluon()
    a = torch.randn(4096, 4096, device="cuda", dtype=BF).t()  # column-major: no TMA descriptor on its rows
    b = torch.randn(4096, 4096, device="cuda", dtype=BF)
    plan = matmul_plan(a, b)
    assert plan["kernel"] == "triton", plan
    c = matmul(a, b)
    assert_close(c[:128], a[:128].double() @ b.double(), atol=16 * 4096 * 2.0**-24, rtol=RTOL[BF], what="fallback")


def _short_gluon_shape():
    """The first of a few small squares the model gives the Gluon kernel (predicted under GLUON_EAGER_MIN_MS)."""
    from tilewise.kernels import gemm

    for n in (1000, 1024, 768, 1536, 2048):
        best = gemm._gluon_cached(n, n, n, "bf16", "h200", "nn")
        tms = gemm._triton_ms(gemm.choose_config(n, n, n, "bf16"), n, n, n, "bf16", "h200", "nn")
        if best is not None and best[1] < tms and best[1] < gemm.GLUON_EAGER_MIN_MS:
            return n
    raise AssertionError("no small square is predicted faster on the Gluon kernel: pick another shape")


def test_short_problem_runs_triton_eagerly_and_gluon_in_a_graph():
    """A small square the model gives the Gluon kernel is predicted well under GLUON_EAGER_MIN_MS: eager calls run
    the Triton config, a captured call the Gluon kernel; both answers checked against float64."""
    _skip_unless_gluon()
    n = _short_gluon_shape()
    a = torch.randn(n, n, device="cuda", dtype=BF)
    b = torch.randn(n, n, device="cuda", dtype=BF)
    out = poisoned((n, n), BF, "cuda")
    plan = matmul_plan(a, b, out=out)
    assert plan["kernel"] == "gluon" and plan["eager_kernel"] == "triton", plan
    ref = a.double() @ b.double()
    bound = dict(atol=16 * n * 2.0**-24 + 1e-6, rtol=RTOL[BF])
    out.fill_(float("nan"))
    matmul(a, b, out=out)
    assert_close(out, ref, **bound, what="eager (Triton)")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        matmul(a, b, out=out)
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert_close(out, ref, **bound, what="graph replay (Gluon)")
