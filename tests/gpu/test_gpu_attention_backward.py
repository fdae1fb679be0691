"""The flash attention backward on the GPU: every gradient element against float64, memory linear in S,
CUDA-graph capture and torch.compile of a training step.

Run on the device: PYTHONPATH=src pytest -m gpu tests/gpu/test_gpu_attention_backward.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import assert_close  # noqa: E402

import tilewise.kernels as K  # noqa: E402
from tilewise.kernels.attention_backward import attention_backward  # noqa: E402
from tilewise.kernels.flash_attention import attention  # noqa: E402

DEV = "cuda"
# relative to the largest element of each gradient: P and dS are rounded to the input dtype before their GEMMs
# (as in FlashAttention and cuDNN), so the error is a few units of the dtype's last place, summed over keys
TOL = {torch.bfloat16: 3e-2, torch.float16: 5e-3}


def reference_grads(q, k, v, d_out, causal):
    """float64 autograd of eager attention, one head at a time (bottom-right causal; GQA by head index)."""
    g = q.shape[1] // k.shape[1]
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    sq, sk, d = q.shape[2], k.shape[2], q.shape[3]
    mask = torch.arange(sk, device=DEV)[None, :] <= torch.arange(sq, device=DEV)[:, None] + (sk - sq)
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            s = q64[b, h] @ k64[b, h // g].T / math.sqrt(d)
            if causal:
                s = s.masked_fill(~mask, float("-inf"))
            o = torch.softmax(s, -1) @ v64[b, h // g]
            o.backward(d_out[b, h].double())
    return q64.grad, k64.grad, v64.grad


def rand(*shape, dtype):
    return torch.randn(*shape, dtype=dtype, device=DEV)


CASES = [  # (D, causal, dtype, deterministic): bf16 on every head dim and mask, fp16 and the dQ kernel on a few
    *((d, c, torch.bfloat16, False) for d in (64, 128, 256) for c in (False, True)),
    (128, True, torch.bfloat16, True),
    (256, False, torch.bfloat16, True),
    (64, True, torch.float16, False),
    (128, False, torch.float16, True),
]
IDS = [
    f"d{d}-{'causal' if c else 'full'}-{str(t)[6:]}-{'deterministic' if det else 'default'}" for d, c, t, det in CASES
]


@pytest.mark.parametrize("D,causal,dtype,deterministic", CASES, ids=IDS)
def test_every_gradient_element_matches_float64(D, causal, dtype, deterministic):
    B, H, Hk, S = 2, 4, 2, 1000  # GQA 2; 1000 is a multiple of no block
    q, k, v = rand(B, H, S, D, dtype=dtype), rand(B, Hk, S, D, dtype=dtype), rand(B, Hk, S, D, dtype=dtype)
    out, lse = attention(q, k, v, causal=causal)
    d_out = rand(B, H, S, D, dtype=dtype)
    got = attention_backward(d_out, q, k, v, out, lse, causal=causal, deterministic=deterministic)
    want = reference_grads(q, k, v, d_out, causal)
    for a, e, name in zip(got, want, ("dq", "dk", "dv")):
        assert_close(a, e, atol=TOL[dtype] * float(e.abs().max()), what=f"{name} D{D} causal={causal} {dtype}")


@pytest.mark.parametrize("D", [64, 256])
def test_atomic_dq_mode_matches_float64(D):
    # the mode the default (dQ by a second kernel) replaced: dQ added in fp32 with atomics from the dK/dV program
    from tilewise.kernels.attention_backward import backward_config

    B, H, Hk, S = 1, 4, 2, 1000
    q, k, v = (
        rand(B, H, S, D, dtype=torch.bfloat16),
        rand(B, Hk, S, D, dtype=torch.bfloat16),
        rand(B, Hk, S, D, dtype=torch.bfloat16),
    )
    out, lse = attention(q, k, v, causal=True)
    d_out = rand(B, H, S, D, dtype=torch.bfloat16)
    cfg = backward_config(D, torch.bfloat16, dq="atomic")
    assert cfg.dq == "atomic"
    got = attention_backward(d_out, q, k, v, out, lse, causal=True, config=cfg)
    want = reference_grads(q, k, v, d_out, True)
    for a, e, name in zip(got, want, ("dq", "dk", "dv")):
        assert_close(a, e, atol=TOL[torch.bfloat16] * float(e.abs().max()), what=f"atomic {name} D{D}")


def test_mqa_unequal_lengths_strided():
    # MQA (one K/V head for 8 query heads), Sq != Sk under the causal mask, [B, S, H, D] storage
    q = rand(1, 777, 8, 128, dtype=torch.bfloat16).transpose(1, 2)
    k, v = (rand(1, 1300, 1, 128, dtype=torch.bfloat16).transpose(1, 2) for _ in range(2))
    out, lse = attention(q, k, v, causal=True)
    d_out = rand(*out.shape, dtype=torch.bfloat16)
    got = attention_backward(d_out, q, k, v, out, lse, causal=True)
    want = reference_grads(q, k, v, d_out, True)
    for a, e, name in zip(got, want, ("dq", "dk", "dv")):
        assert_close(a, e, atol=TOL[torch.bfloat16] * float(e.abs().max()), what=name)


def test_deterministic_mode_is_bitwise_repeatable():
    q, k, v = (rand(2, 8, 1500, 128, dtype=torch.bfloat16) for _ in range(3))
    out, lse = attention(q, k, v, causal=True)
    d_out = torch.randn_like(out)
    first = attention_backward(d_out, q, k, v, out, lse, causal=True, deterministic=True)
    for _ in range(3):
        again = attention_backward(d_out, q, k, v, out, lse, causal=True, deterministic=True)
        assert all(torch.equal(a, b) for a, b in zip(first, again))


def _peak_extra(S: int) -> int:
    B, H, D = 1, 8, 64
    q, k, v = (rand(B, H, S, D, dtype=torch.bfloat16) for _ in range(3))
    out, lse = attention(q, k, v, causal=False)
    d_out = torch.randn_like(out)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    grads = attention_backward(d_out, q, k, v, out, lse)
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - before
    del grads
    return extra


def test_backward_memory_grows_linearly_in_s():
    # an S x S fp32 buffer at S 8192, H 8 would be 2 GiB; the backward's own buffers are dQ, dK, dV (bf16) and D,
    # 3 x 2 = 6 bytes per (row, head, d) plus 4 per row (the atomic mode adds a 4-byte fp32 dQ accumulator: 10)
    small, large = _peak_extra(4096), _peak_extra(8192)
    linear = 8 * 8192 * (64 * 10 + 4)
    assert large <= 1.1 * linear + (2 << 20), (small, large, linear)
    assert large / small <= 2.2, (small, large)


def test_cuda_graph_of_a_training_step():
    q, k, v = (rand(2, 8, 700, 64, dtype=torch.bfloat16).requires_grad_() for _ in range(3))
    w = rand(2, 8, 700, 64, dtype=torch.bfloat16)

    def step():
        out, _ = K.attention(q, k, v, causal=True)
        return torch.autograd.grad((out.float() * w).sum(), (q, k, v))

    want = step()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = step()
    with torch.no_grad():
        for t in (q, k, v, w):
            t.copy_(torch.randn_like(t))
    graph.replay()
    torch.cuda.synchronize()
    want = step()
    for a, e, name in zip(got, want, ("dq", "dk", "dv")):
        assert_close(a, e, atol=2e-2 * float(e.abs().max()), what=f"graph replay {name}")


def test_torch_compile_fullgraph_training_step():
    import torch._dynamo

    torch._dynamo.reset()

    def step(q, k, v, w):
        out, _ = K.attention(q, k, v, causal=True)
        return torch.autograd.grad((out.float() * w).sum(), (q, k, v))

    q, k, v = (rand(1, 8, 513, 128, dtype=torch.bfloat16).requires_grad_() for _ in range(3))
    w = rand(1, 8, 513, 128, dtype=torch.bfloat16)

    def loss(q, k, v, w):
        out, _ = K.attention(q, k, v, causal=True)
        return (out.float() * w).sum()

    compiled = torch.compile(loss, fullgraph=True)
    got = torch.autograd.grad(compiled(q, k, v, w), (q, k, v))
    want = step(q, k, v, w)
    for a, e, name in zip(got, want, ("dq", "dk", "dv")):
        assert_close(a, e, atol=2e-2 * float(e.abs().max()), what=f"compiled {name}")
