"""On the GPU: after the first call, every op launches through its cached plan and Triton's compiled kernel
(the fast path), and the answers of the first, second and later calls are right and identical; a call with
other strides or alignment gets its own plan and is right too. fp32 attention at every head dim runs."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from helpers import assert_close  # noqa: E402

from tilewise.kernels import decode as dec  # noqa: E402
from tilewise.kernels import (  # noqa: E402
    ffn,  # noqa: E402
    gemm,
    grouped_gemm,
    moe_layer,
    reduce,
    utils,
)
from tilewise.kernels import flash_attention as fa  # noqa: E402

pytestmark = pytest.mark.gpu
DEV = "cuda"


def _launchers(plan):
    """Every Launcher a plan holds (its attributes, and inside tuples/lists of steps)."""
    out = []
    for name in getattr(type(plan), "__slots__", ()):
        v = getattr(plan, name, None)
        if isinstance(v, utils.Launcher):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out += [
                x for step in v for x in (step if isinstance(step, tuple) else (step,)) if isinstance(x, utils.Launcher)
            ]
    return out


def _three_calls(call, plans, _unused=None):
    plans.clear()  # an earlier test may have planned the same signature: start from none
    outs = [call() for _ in range(3)]
    torch.cuda.synchronize()
    new = list(plans.values())
    assert new, "no plan was cached"
    fast = utils.fast_launch_enabled()
    for plan in new:
        plan = plan[-1] if isinstance(plan, tuple) else plan
        if getattr(plan, "gluon", False):  # the Gluon FA3 kernel ran, not this plan's Triton launcher
            continue
        for launcher in _launchers(plan):
            assert (launcher.run is not None) == fast, f"fast path {'not ' if fast else ''}taken"
    return outs


def _same(outs):
    for o in outs[1:]:
        for a, b in zip(outs[0] if isinstance(outs[0], tuple) else (outs[0],), o if isinstance(o, tuple) else (o,)):
            assert torch.equal(a, b), "a later call differs from the first"


def test_matmul_fast_path():
    a = torch.randn(100, 72, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(72, 136, device=DEV, dtype=torch.bfloat16)
    outs = _three_calls(lambda: gemm.matmul(a, b), gemm._PLANS, len(gemm._PLANS))
    _same(outs)
    assert_close(outs[0], a.double() @ b.double(), atol=2e-2, rtol=2e-2, what="C")
    at = torch.randn(72, 100, device=DEV, dtype=torch.bfloat16).t()  # other strides: its own plan
    assert_close(gemm.matmul(at, b), at.double() @ b.double(), atol=2e-2, rtol=2e-2, what="C (a^T)")
    odd = torch.randn(100 * 72 + 1, device=DEV, dtype=torch.bfloat16)[1:].view(100, 72)  # 2-byte offset
    assert_close(gemm.matmul(odd, b), odd.double() @ b.double(), atol=2e-2, rtol=2e-2, what="C (unaligned a)")


def test_split_k_and_persistent_fast_path():
    a = torch.randn(64, 8192, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(8192, 256, device=DEV, dtype=torch.bfloat16)
    outs = _three_calls(lambda: gemm.matmul(a, b), gemm._PLANS, len(gemm._PLANS))
    _same(outs)
    assert_close(outs[0], a.double() @ b.double(), atol=0.5, rtol=2e-2, what="C split-K")
    a = torch.randn(2048, 1024, device=DEV, dtype=torch.float16)
    b = torch.randn(1024, 4096, device=DEV, dtype=torch.float16)
    outs = _three_calls(lambda: gemm.matmul(a, b), gemm._PLANS, len(gemm._PLANS))
    _same(outs)
    assert_close(outs[0], a.double() @ b.double(), atol=0.1, rtol=1e-2, what="C persistent")


def test_sum_fast_path():
    x = torch.randn(3_000_001, device=DEV)
    outs = _three_calls(lambda: reduce.sum(x), reduce._PLANS, len(reduce._PLANS))
    _same(outs)
    assert_close(outs[0], x.double().sum(), atol=1e-2, rtol=1e-5, what="sum")
    y = torch.randn(64, 1 << 16, device=DEV, dtype=torch.float16)
    outs = _three_calls(lambda: reduce.sum(y, -1), reduce._PLANS, len(reduce._PLANS))
    _same(outs)
    assert_close(outs[0], y.double().sum(-1), atol=0.05, rtol=2e-3, what="sum dim")


@pytest.mark.parametrize("d", [16, 32, 64, 128, 256])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_attention_every_head_dim_and_dtype(d, dtype):
    """fp32 at D 128 once asked for 393,216 B of shared memory; now every combination runs."""
    q = torch.randn(1, 4, 300, d, device=DEV, dtype=dtype)
    k = torch.randn(1, 2, 300, d, device=DEV, dtype=dtype)
    v = torch.randn(1, 2, 300, d, device=DEV, dtype=dtype)
    outs = _three_calls(lambda: fa.attention(q, k, v, causal=True), fa._PLANS, len(fa._PLANS))
    _same(outs)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), is_causal=True, enable_gqa=True
    )
    tol = 2e-3 if dtype == torch.float32 else 2e-2
    assert_close(outs[0][0], ref, atol=tol, rtol=tol, what=f"out D{d} {dtype}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_decode_fast_path(dtype):
    q = torch.randn(3, 8, 1, 128, device=DEV, dtype=dtype)
    kc = torch.randn(3, 2, 5000, 128, device=DEV, dtype=dtype)
    vc = torch.randn_like(kc)
    lens = torch.tensor([5000, 1, 2345], device=DEV, dtype=torch.int32)
    outs = _three_calls(lambda: dec.decode_attention(q, kc, vc, lens), dec._PLANS, len(dec._PLANS))
    _same(outs)
    for b, n in enumerate((5000, 1, 2345)):
        ref = torch.nn.functional.scaled_dot_product_attention(
            q[b : b + 1].double(), kc[b : b + 1, :, :n].double(), vc[b : b + 1, :, :n].double(), enable_gqa=True
        )
        tol = 2e-3 if dtype == torch.float32 else 2e-2
        assert_close(outs[0][0][b : b + 1], ref, atol=tol, rtol=tol, what=f"decode row {b}")


def test_grouped_moe_ffn_fast_path():
    x = torch.randn(96, 128, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(4, 128, 64, device=DEV, dtype=torch.bfloat16)
    off = torch.tensor([30, 30, 70, 96], device=DEV, dtype=torch.int32)
    outs = _three_calls(lambda: grouped_gemm.grouped_matmul(x, w, off), grouped_gemm._CALLS, len(grouped_gemm._CALLS))
    _same(outs)
    ref = torch.cat(
        [x[:30].double() @ w[0].double(), x[30:70].double() @ w[2].double(), x[70:].double() @ w[3].double()]
    )
    assert_close(outs[0], ref, atol=5e-2, rtol=2e-2, what="grouped")
    mx, ml = torch.randn(40, 128, device=DEV, dtype=torch.bfloat16), torch.randn(40, 8, device=DEV)
    mgu = torch.randn(8, 128, 128, device=DEV, dtype=torch.bfloat16) / 11
    mdn = torch.randn(8, 64, 128, device=DEV, dtype=torch.bfloat16) / 8
    outs = [moe_layer.moe(mx, ml, mgu, mdn, 2) for _ in range(3)]
    _same(outs)
    assert_close(outs[0], moe_layer.moe_reference(mx, ml, mgu, mdn, 2), atol=3e-2, rtol=3e-2, what="moe")
    z = torch.randn(200, 2, 64, device=DEV, dtype=torch.bfloat16)
    wg, wu = (torch.randn(2, 64, 96, device=DEV, dtype=torch.bfloat16) / 8 for _ in range(2))
    wd = torch.randn(2, 96, 64, device=DEV, dtype=torch.bfloat16) / 10
    outs = _three_calls(lambda: ffn.flash_ffn(z, wg, wu, wd), ffn._FWD_PLANS, len(ffn._FWD_PLANS))
    _same(outs)
    ref = ffn.mhffn_unfused(z.double(), wg.double(), wu.double(), wd.double())
    assert_close(outs[0], ref, atol=3e-2, rtol=3e-2, what="flash_ffn")


@pytest.mark.parametrize("d", [64, 128])
def test_flash_ffn_fp32_fits_and_is_right(d):
    """fp32 at d_h 128 asked for 360,448 B of shared memory with the 16-bit tiles (sm_90 compile, triton 3.6)."""
    z = torch.randn(300, 2, d, device=DEV, requires_grad=True)
    wg, wu = ((torch.randn(2, d, 80, device=DEV) / d**0.5).requires_grad_() for _ in range(2))
    wd = (torch.randn(2, 80, d, device=DEV) / 80**0.5).requires_grad_()
    y = ffn.flash_ffn(z, wg, wu, wd)
    dy = torch.randn_like(y)
    y.backward(dy)
    leaves = (z, wg, wu, wd)
    ref_in = [t.detach().double().requires_grad_() for t in leaves]
    ref = ffn.mhffn_unfused(*ref_in)
    ref.backward(dy.double())
    scale = float(ref.abs().max())
    assert_close(y, ref, atol=2e-3 * scale, rtol=5e-3, what="y")  # TF32 dots
    for t, r, name in zip(leaves, ref_in, ("dz", "dWg", "dWu", "dWd")):
        assert_close(t.grad, r.grad, atol=2e-3 * float(r.grad.abs().max()), rtol=5e-3, what=name)
