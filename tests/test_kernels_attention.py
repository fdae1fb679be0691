"""tilewise.kernels.attention under the Triton interpreter, against a float64 reference.

Run: TRITON_INTERPRET=1 pytest tests/test_kernels_attention.py  (bf16 is checked on the GPU:
tests/gpu/test_gpu_attention.py; the interpreter computes bf16 wrongly).
"""

from __future__ import annotations

import math

import pytest
from helpers import assert_close, kernel_device

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import tilewise.kernels.flash_attention as attn_mod  # noqa: E402
from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels.flash_attention import ForwardConfig, attention  # noqa: E402

pytestmark = pytest.mark.kernel
DEV = kernel_device()
# per-dtype tolerance on outputs of magnitude ~1 (softmax-weighted means of N(0,1) values)
TOL = {torch.float16: 2e-3, torch.float32: 2e-5, torch.bfloat16: 2e-2}


def reference(q, k, v, causal=False, scale=None):
    """float64 eager attention; causal mask aligned at the bottom right; GQA by repeating K/V heads."""
    q, k, v = (t.double() for t in (q, k, v))
    h, hk = q.shape[1], k.shape[1]
    k = k.repeat_interleave(h // hk, 1)
    v = v.repeat_interleave(h // hk, 1)
    sc = (1.0 / math.sqrt(q.shape[-1])) if scale is None else scale
    s = q @ k.transpose(-1, -2) * sc
    sq, sk = q.shape[2], k.shape[2]
    if causal:
        i = torch.arange(sq)[:, None]
        j = torch.arange(sk)[None, :]
        s = s.masked_fill(j > i + sk - sq, float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)  # rows without keys: p = 0
    return p @ v, lse


def rand(*shape, dtype):
    return torch.randn(*shape, dtype=dtype, device=DEV)


def check(q, k, v, causal=False, scale=None, config=None):
    out, lse = attention(q, k, v, causal=causal, scale=scale, config=config)
    ro, rl = reference(q.cpu(), k.cpu(), v.cpu(), causal, scale)
    assert out.shape == q.shape and out.dtype == q.dtype
    assert lse.shape == q.shape[:3] and lse.dtype == torch.float32
    # every element, NaN poison included; lse is -inf exactly on rows that see no key
    assert_close(out, ro, atol=4 * TOL[q.dtype], what="out")
    assert_close(lse, rl, atol=1e-4, what="lse")
    return out, lse


@pytest.fixture(autouse=True)
def _poison_allocations(poison):
    """Every tensor the op allocates starts poisoned (NaN), so an element it never writes fails the test."""
    poison(attn_mod.torch, "empty", "empty_like")


@pytest.mark.parametrize(
    "b,h,hk,s,d,causal,dtype",
    [
        (1, 2, 2, 1, 16, False, torch.float32),  # S = 1
        (1, 2, 2, 1, 32, True, torch.float16),
        (2, 4, 4, 17, 32, True, torch.float16),  # S = 17: partial tiles, GQA ratio 1
        (1, 4, 1, 17, 64, False, torch.float16),  # GQA ratio 4
        (1, 8, 1, 17, 16, True, torch.float32),  # GQA ratio 8
        (1, 2, 2, 64, 16, True, torch.float32),  # S a multiple of the tile: the diagonal tile only
        (1, 2, 1, 65, 32, False, torch.float32),  # one key past a tile
    ],
)
def test_small_shapes(b, h, hk, s, d, causal, dtype):
    check(rand(b, h, s, d, dtype=dtype), rand(b, hk, s, d, dtype=dtype), rand(b, hk, s, d, dtype=dtype), causal)


def test_long_sequence_1000():
    """S = 1000 (not a multiple of any tile), causal: skipped, unmasked and diagonal tiles together."""
    q, k, v = (rand(1, 1, 1000, 16, dtype=torch.float16) for _ in range(3))
    check(q, k, v, causal=True, config=ForwardConfig(64, 64, 4, 1))


@pytest.mark.parametrize("sq,sk", [(5, 40), (40, 5), (33, 33), (1, 70)])
def test_causal_edges(sq, sk):
    """Bottom-right alignment: query i sees keys <= i + sk - sq; with sq > sk the first rows see none."""
    q = rand(1, 2, sq, 32, dtype=torch.float32)
    k, v = rand(1, 2, sk, 32, dtype=torch.float32), rand(1, 2, sk, 32, dtype=torch.float32)
    out, lse = check(q, k, v, causal=True)
    if sq > sk:
        assert (out[:, :, : sq - sk] == 0).all() and (lse[:, :, : sq - sk] == float("-inf")).all()


def test_causal_matches_sdpa_when_square():
    q, k, v = (rand(1, 2, 20, 32, dtype=torch.float32) for _ in range(3))
    out, _ = attention(q, k, v, causal=True)
    ref = torch.nn.functional.scaled_dot_product_attention(q.cpu(), k.cpu(), v.cpu(), is_causal=True)
    assert_close(out, ref, atol=1e-5)


def test_scale_and_strided_inputs():
    """A custom scale, and q/k/v as [B, S, H, D] transposed views (the pointer path, no TMA descriptor)."""
    q = rand(2, 19, 4, 32, dtype=torch.float16).transpose(1, 2)
    k = rand(2, 19, 2, 32, dtype=torch.float16).transpose(1, 2)
    v = rand(2, 19, 2, 32, dtype=torch.float16).transpose(1, 2)
    check(q, k, v, causal=False, scale=0.3)
    check(q, k, v, causal=True, scale=0.05)


def test_descriptor_and_pointer_paths_agree():
    q, k, v = (rand(1, 2, 40, 32, dtype=torch.float32) for _ in range(3))
    a, la = attention(q, k, v, causal=True, config=ForwardConfig(32, 32, 4, 1, use_desc=True))
    b, lb = attention(q, k, v, causal=True, config=ForwardConfig(32, 32, 4, 1, use_desc=False))
    assert_close(a, b, atol=1e-6, what="out")
    assert_close(la, lb, atol=1e-6, what="lse")


def test_config_follows_the_model_budgets(monkeypatch):
    """The chosen tiles fit the model's register and shared-memory budgets; the reason gives the numbers."""
    monkeypatch.setattr(attn_mod, "interpreting", lambda: False)
    for d in (64, 128, 256):
        cfg = attn_mod.forward_config(d, True, torch.bfloat16, 4096)
        b = attn_mod._budget(d, cfg.block_m, cfg.block_n, cfg.num_warps, cfg.num_stages, "bf16")
        assert b["fits"] and cfg.block_n >= 64  # N >= 64: the wgmma shared-memory feed bound
        assert "registers" in cfg.reason and "of 255" in cfg.reason and "KB of 227 KB" in cfg.reason


# --------------------------------------------------------------------------- bad inputs


def _qkv(h=4, hk=2, s=8, d=32, dtype=torch.float16):
    return rand(1, h, s, d, dtype=dtype), rand(1, hk, s, d, dtype=dtype), rand(1, hk, s, d, dtype=dtype)


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: (*_qkv(h=4, hk=3)[:1], *_qkv(h=3, hk=3)[1:]), "multiple of k/v heads"),
        (lambda: (rand(1, 4, 8, 32, dtype=torch.float16), *_qkv(d=64)[1:]), "head_dim 32"),
        (lambda: (rand(1, 4, 8, 48, dtype=torch.float16),) * 3, "head_dim must be one of"),
        (lambda: (_qkv()[0], *_qkv(dtype=torch.float32)[1:]), "share one dtype"),
        (lambda: tuple(t.to(torch.int32) for t in _qkv()), "float16, bfloat16 or float32"),
        (lambda: (_qkv()[0], _qkv()[1].to("meta"), _qkv()[2]), "one device"),
        (lambda: (rand(2, 4, 8, 32, dtype=torch.float16), *_qkv()[1:]), "batch 2"),
        (lambda: (rand(4, 8, 32, dtype=torch.float16), *_qkv()[1:]), "shape \\[batch, heads, seq, head_dim\\]"),
        (lambda: (_qkv()[0], _qkv()[1], rand(1, 2, 9, 32, dtype=torch.float16)), "same shape"),
    ],
)
def test_bad_inputs(make, match):
    q, k, v = make()
    with pytest.raises(InputError, match=match):
        attention(q, k, v)


def test_bad_scale():
    with pytest.raises(InputError, match="scale"):
        attention(*_qkv(), scale=float("nan"))
