"""Attention forward and decode at full size on the GPU (bf16 included), against fp32 references.

Run on the device: PYTHONPATH=src pytest -m gpu tests/gpu/test_gpu_attention.py
"""

from __future__ import annotations

import math

import pytest
from helpers import assert_close

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _poison_allocations(poison):
    """Every tensor the ops allocate starts poisoned (NaN): an element never written fails the check."""
    poison(torch, "empty", "empty_like")


TOL = {torch.bfloat16: 3e-2, torch.float16: 4e-3}


def ref_attention(q, k, v, causal):
    h, hk = q.shape[1], k.shape[1]
    k = k.float().repeat_interleave(h // hk, 1)
    v = v.float().repeat_interleave(h // hk, 1)
    s = q.float() @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(sk, device=q.device)[None, :]
        s = s.masked_fill(j > i + sk - sq, float("-inf"))
    lse = torch.logsumexp(s, -1)
    return torch.softmax(s, -1) @ v, lse


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "b,h,hk,sq,sk,d,causal",
    [
        (2, 8, 8, 1024, 1024, 128, False),
        (2, 8, 2, 1000, 1000, 128, True),  # GQA 4, S not a multiple of the tile
        (1, 16, 2, 777, 777, 64, True),  # GQA 8
        (1, 4, 4, 333, 333, 256, True),
        (2, 4, 2, 100, 300, 128, True),  # Sq < Sk: bottom-right causal
        (1, 4, 4, 1, 1, 64, False),
    ],
)
def test_forward_full_size(dtype, b, h, hk, sq, sk, d, causal):
    from tilewise.kernels import attention

    q = torch.randn(b, h, sq, d, device="cuda", dtype=dtype)
    k = torch.randn(b, hk, sk, d, device="cuda", dtype=dtype)
    v = torch.randn(b, hk, sk, d, device="cuda", dtype=dtype)
    out, lse = attention(q, k, v, causal=causal)
    ro, rl = ref_attention(q, k, v, causal)
    assert_close(out, ro, atol=TOL[dtype], what="out")
    assert_close(lse, rl, atol=1e-2, what="lse")


def test_forward_matches_sdpa_headline_slice():
    import torch.nn.functional as F

    from tilewise.kernels import attention

    q, k, v = (torch.randn(1, 32, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    for causal in (False, True):
        out, _ = attention(q, k, v, causal=causal)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        assert_close(out, ref, atol=2e-2, what=f"out, causal={causal}")


def ref_decode(q, k, v, lens):
    b_, hq, d = q.shape
    hk = k.shape[1]
    out = torch.zeros(b_, hq, d, device=q.device)
    for b in range(b_):
        n = int(lens[b])
        if n == 0:
            continue
        kk = k[b, :, :n].float().repeat_interleave(hq // hk, 0)
        vv = v[b, :, :n].float().repeat_interleave(hq // hk, 0)
        s = torch.einsum("hd,hnd->hn", q[b].float(), kk) / math.sqrt(d)
        out[b] = torch.einsum("hn,hnd->hd", torch.softmax(s, -1), vv)
    return out


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("splits", [None, 1, 3, 16])
def test_decode_full_size(dtype, splits):
    from tilewise.kernels import decode_attention

    lens = [0, 1, 4097, 20000, 333]
    b, hq, hk, d, cap = len(lens), 32, 8, 128, 20000
    q = torch.randn(b, hq, d, device="cuda", dtype=dtype)
    k = torch.randn(b, hk, cap, d, device="cuda", dtype=dtype)
    v = torch.randn_like(k)
    out, lse = decode_attention(q, k, v, torch.tensor(lens, device="cuda"), num_splits=splits)
    ro = ref_decode(q, k, v, lens)
    assert_close(out, ro, atol=TOL[dtype], what="out")
    assert (lse[0] == float("-inf")).all() and torch.isfinite(lse[1:]).all()


@pytest.mark.parametrize(
    "d,dtype", [(256, torch.bfloat16), (128, torch.float32), (256, torch.float32), (64, torch.float16)]
)
def test_decode_head_dims_and_fp32(d, dtype):
    """Every head dim and fp32 on the GPU: the default tile narrows with the row width so the K/V stages
    stay within the measured 192 KiB (128 keys at D 128 in 16-bit; 64 at D 256 or fp32 D 128; 32 at fp32 D 256)."""
    from tilewise.kernels import decode_attention

    lens = [1, 3000, 777]
    q = torch.randn(3, 16, d, device="cuda", dtype=dtype)
    k = torch.randn(3, 4, 3000, d, device="cuda", dtype=dtype)
    v = torch.randn_like(k)
    for splits in (None, 1, 4):
        out, _ = decode_attention(q, k, v, torch.tensor(lens, device="cuda"), num_splits=splits)
        ro = ref_decode(q, k, v, lens)
        # fp32 goes through the Tensor Cores as TF32 on the GPU (10-bit mantissa), hence its looser bound
        assert_close(out, ro, atol=TOL.get(dtype, 2e-2), what=f"out, {splits} splits")


@pytest.mark.parametrize("page,pages", [(256, 16), (16, 256)])
def test_decode_paged_matches_contiguous(page, pages):
    from tilewise.kernels import decode_attention

    b, hk, d = 3, 8, 128
    k = torch.randn(b, hk, page * pages, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    q = torch.randn(b, 64, d, device="cuda", dtype=torch.bfloat16)
    perm = torch.randperm(b * pages, device="cuda")
    kp = torch.empty(b * pages, hk, page, d, device="cuda", dtype=torch.bfloat16)
    vp = torch.empty_like(kp)
    kp[perm] = k.reshape(b, hk, pages, page, d).permute(0, 2, 1, 3, 4).reshape(-1, hk, page, d)
    vp[perm] = v.reshape(b, hk, pages, page, d).permute(0, 2, 1, 3, 4).reshape(-1, hk, page, d)
    lens = torch.tensor([4096, 1000, 17], device="cuda")
    a, _ = decode_attention(q, k, v, lens)
    p, _ = decode_attention(q, kp, vp, lens, block_table=perm.view(b, pages).to(torch.int32))
    assert_close(p, a, atol=1e-2, what="paged out")


def test_decode_matches_sdpa_gqa():
    import torch.nn.functional as F

    from tilewise.kernels import decode_attention

    q = torch.randn(2, 64, 1, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(2, 8, 65536, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    out, _ = decode_attention(q, k, v, torch.tensor([65536, 65536], device="cuda"))
    ref = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    assert_close(out, ref, atol=1e-2, what="out")
