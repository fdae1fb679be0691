"""tilewise.kernels.attention_backward under the Triton interpreter, against float64 autograd.

Run: TRITON_INTERPRET=1 pytest tests/test_kernels_attention_backward.py  (bf16 and the head dims of the
GPU's tiles are checked on the GPU: tests/gpu/test_gpu_attention_backward.py).
"""

from __future__ import annotations

import math

import pytest
from helpers import assert_close, kernel_device

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import tilewise.kernels.attention_backward as bwd_mod  # noqa: E402
from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels.attention_backward import attention_backward  # noqa: E402
from tilewise.kernels.flash_attention import attention  # noqa: E402

pytestmark = pytest.mark.kernel
DEV = kernel_device()
# per-dtype tolerance, relative to the largest gradient element (the kernel rounds P and dS to the input dtype
# before each GEMM, as FlashAttention does; fp32 runs ieee dots)
TOL = {torch.float16: 1.5e-2, torch.float32: 2e-5}


def reference_grads(q, k, v, d_out, d_lse, causal, scale=None):
    """dq, dk, dv of (out, lse) by float64 autograd of eager attention (bottom-right causal, GQA by repeat)."""
    q, k, v = (t.detach().cpu().double().requires_grad_() for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    sc = (1.0 / math.sqrt(q.shape[-1])) if scale is None else scale
    s = q @ kk.transpose(-1, -2) * sc
    sq, sk = q.shape[2], k.shape[2]
    if causal:
        i, j = torch.arange(sq)[:, None], torch.arange(sk)[None, :]
        s = s.masked_fill(j > i + sk - sq, float("-inf"))
    lse = torch.logsumexp(s, -1)
    seen = torch.isfinite(lse)
    p = torch.where(seen[..., None], torch.exp(s - torch.where(seen, lse, 0.0)[..., None]), 0.0)
    out = p @ vv
    outs, grads = [out], [d_out.cpu().double()]
    if d_lse is not None:
        outs.append(torch.where(seen, lse, 0.0))
        grads.append(torch.where(seen, d_lse.cpu().double(), 0.0))
    return torch.autograd.grad(outs, (q, k, v), grads)


def check(
    B, H, Hk, Sq, Sk, D, causal, dtype, *, d_lse=False, deterministic=False, scale=None, layout=None, config=None
):
    q = torch.randn(B, H, Sq, D, dtype=dtype, device=DEV)
    k = torch.randn(B, Hk, Sk, D, dtype=dtype, device=DEV)
    v = torch.randn(B, Hk, Sk, D, dtype=dtype, device=DEV)
    if layout == "bshd":  # [B, S, H, D] storage seen as [B, H, S, D]: strided heads and rows
        q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
    out, lse = attention(q, k, v, causal=causal, scale=scale)
    d_out = torch.randn_like(out)
    dl = torch.randn_like(lse) if d_lse else None
    dq, dk, dv = attention_backward(
        d_out, q, k, v, out, lse, d_lse=dl, causal=causal, scale=scale, deterministic=deterministic, config=config
    )
    ref = reference_grads(q, k, v, d_out, dl, causal, scale)
    for got, want, name in zip((dq, dk, dv), ref, ("dq", "dk", "dv")):
        assert got.dtype == dtype and got.shape == want.shape
        assert_close(got, want, atol=TOL[dtype] * max(1.0, float(want.abs().max())), what=name)
    return dq, dk, dv


@pytest.fixture(autouse=True)
def _poisoned(poison):
    poison(bwd_mod.torch, "empty")  # every output element the kernels forget is NaN


@pytest.mark.parametrize("S", [1, 7, 127])
@pytest.mark.parametrize("causal", [False, True])
def test_matches_float64_awkward_lengths(S, causal):
    check(1, 2, 2, S, S, 16, causal, torch.float32)


@pytest.mark.parametrize("deterministic", [False, True])
def test_gqa_causal_fp16(deterministic):
    check(2, 4, 2, 45, 45, 32, True, torch.float16, deterministic=deterministic)


@pytest.mark.parametrize("Sq,Sk", [(9, 70), (70, 9), (33, 33)])
def test_causal_unequal_lengths_and_rows_without_keys(Sq, Sk):
    # Sq > Sk: the first Sq - Sk rows see no key (lse -inf, out 0): their dq must be exactly 0
    dq, _, _ = check(1, 3, 1, Sq, Sk, 16, True, torch.float32, d_lse=True)
    if Sq > Sk:
        assert (dq[:, :, : Sq - Sk] == 0).all()


@pytest.mark.parametrize("dq", ["atomic", "separate"])
def test_each_dq_mode(dq):
    cfg = bwd_mod.BackwardConfig(16, 32, 4, 1, 32, 16, 4, 1, dq=dq)
    check(1, 4, 2, 70, 70, 16, True, torch.float32, config=cfg)


def test_lse_gradient_and_scale_deterministic_fp16():
    check(1, 2, 1, 50, 37, 64, False, torch.float16, d_lse=True, scale=0.3, deterministic=True)


def test_strided_inputs():
    check(2, 4, 2, 29, 29, 16, True, torch.float32, layout="bshd")


def test_deterministic_mode_is_bitwise_repeatable():
    q = torch.randn(1, 4, 53, 16, device=DEV)
    k, v = (torch.randn(1, 2, 53, 16, device=DEV) for _ in range(2))
    out, lse = attention(q, k, v, causal=True)
    d_out = torch.randn_like(out)
    first = attention_backward(d_out, q, k, v, out, lse, causal=True, deterministic=True)
    again = attention_backward(d_out, q, k, v, out, lse, causal=True, deterministic=True)
    for a, b in zip(first, again):
        assert torch.equal(a, b)


def test_deterministic_follows_torch_setting(monkeypatch):
    calls = []
    real = bwd_mod.backward_config

    def spy(*args, **kwargs):
        calls.append(kwargs["deterministic"])
        return real(*args, **kwargs)

    monkeypatch.setattr(bwd_mod, "backward_config", spy)
    q = torch.randn(1, 1, 5, 16, device=DEV)
    out, lse = attention(q, q, q)
    torch.use_deterministic_algorithms(True)
    try:
        attention_backward(out, q, q, q, out, lse)
    finally:
        torch.use_deterministic_algorithms(False)
    attention_backward(out, q, q, q, out, lse)
    assert calls == [True, False]


@pytest.mark.parametrize(
    "bad,needle",
    [
        (lambda q, o, ls: dict(d_out=o[..., :8]), "d_out must have q's shape"),
        (lambda q, o, ls: dict(d_out=o.half()), "d_out must have q's dtype"),
        (lambda q, o, ls: dict(lse=ls.half()), "lse must be float32"),
        (lambda q, o, ls: dict(lse=ls[:, :1]), "lse must have shape"),
        (lambda q, o, ls: dict(d_lse=ls[..., :2]), "d_lse must have shape"),
    ],
)
def test_bad_input_is_one_line(bad, needle):
    q = torch.randn(1, 2, 5, 16, device=DEV)
    out, lse = attention(q, q, q)
    args = dict(d_out=out, q=q, k=q, v=q, out=out, lse=lse)
    args.update(bad(q, out, lse))
    with pytest.raises(InputError, match=needle) as e:
        attention_backward(**args)
    assert "\n" not in str(e.value)


def test_unsupported_head_dim_is_refused():
    q = torch.randn(1, 1, 4, 24, device=DEV)
    with pytest.raises(InputError, match="head_dim must be one of"):
        attention_backward(q, q, q, q, q, torch.zeros(1, 1, 4, device=DEV))


def test_rule_tiles_fit_the_model_budget():
    # the GPU rule (not the interpreter's) fits registers and shared memory for every head dim and 16-bit dtype
    for d in (16, 32, 64, 128, 256):
        for dt in (torch.float16, torch.bfloat16, torch.float32):
            c = bwd_mod._backward_config_cached(d, dt, False, False, "h200")
            from tilewise.model.attention_backward import tile_budget

            b = tile_budget(d, c.block_m, c.block_n, c.num_warps, c.num_stages, bwd_mod._DTYPE_KEY[dt])
            assert b["smem"]["fits"], (d, dt, c)
            if dt != torch.float32:
                assert b["registers"]["fits"], (d, dt, c, b)
