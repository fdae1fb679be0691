"""On the GPU: split-KV decode with its partials merged by a second launch (`merge="launch"`) and by the last
split (`"inline"`), against float64: head dims 64/128/256, GQA ratios 1-8, fp16 and bf16, ragged lengths with
empty and one-key sequences, non-contiguous caches, and under CUDA-graph capture, where the plan takes the
model's graph placement (`merge_placement(...)[0]`) and eager calls the eager one."""

from __future__ import annotations

import pytest
from helpers import assert_close

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from decode_reference import decode_reference  # noqa: E402

from tilewise.kernels import decode as dec  # noqa: E402

pytestmark = pytest.mark.gpu
DEV = "cuda"
TOL = {torch.float16: 4e-3, torch.bfloat16: 2e-2}


def _check(out, lse, q, k, v, lens, what):
    ro, rl = decode_reference(q, k, v, lens)
    assert_close(out.reshape(ro.shape), ro, atol=TOL[q.dtype], what=f"out {what}")
    assert_close(lse, rl, atol=1e-3, what=f"lse {what}")


@pytest.mark.parametrize(
    "d, hq, hk, dtype",
    [(64, 8, 8, torch.float16), (128, 32, 4, torch.bfloat16), (256, 16, 4, torch.float16), (128, 16, 2, torch.float16)],
)  # GQA ratios 1, 8, 4, 8
@pytest.mark.parametrize("merge", ["inline", "launch"])
def test_merge_placements(d, hq, hk, dtype, merge):
    lens = [3001, 0, 1, 4096, 127]
    q = torch.randn(5, hq, 1, d, device=DEV, dtype=dtype)
    k = torch.randn(5, hk, 4096, d, device=DEV, dtype=dtype)
    v = torch.randn(5, hk, 4096, d, device=DEV, dtype=dtype)
    tl = torch.tensor(lens, device=DEV, dtype=torch.int32)
    for splits in (3, 16):
        out, lse = dec.decode_attention(q, k, v, tl, num_splits=splits, merge=merge)
        _check(out, lse, q, k, v, lens, f"{merge} s{splits}")
        again, _ = dec.decode_attention(q, k, v, tl, num_splits=splits, merge=merge)
        assert torch.equal(again, out), "the merge must not depend on arrival order"


def test_non_contiguous_caches_and_one_key():
    base = torch.randn(3, 1000, 4, 128, device=DEV, dtype=torch.bfloat16)  # [B, L, Hkv, D] viewed as [B, Hkv, L, D]
    k, v = base.transpose(1, 2), (base * 0.5).transpose(1, 2)
    q = torch.randn(3, 16, 128, device=DEV, dtype=torch.bfloat16)
    for merge in ("inline", "launch"):
        for lens in ([1000, 1, 999], [1, 1, 1]):
            out, lse = dec.decode_attention(q, k, v, lens, num_splits=5, merge=merge)
            _check(out, lse, q, k, v, lens, f"strided {merge}")


def test_capture_takes_the_graph_placement():
    """A shape where the model places the merge differently in a graph and eagerly: B16 Hq8 Hkv8 L256 in 2
    splits of 128-key tiles (256 programs, two generations on 132 SMs: a second kernel in a graph; a short,
    host-bound step eagerly: the last split merges). Both placements answer right."""
    b, hq, hk, L, d = 16, 8, 8, 256, 128
    q = torch.randn(b, hq, 1, d, device=DEV, dtype=torch.bfloat16)
    k = torch.randn(b, hk, L, d, device=DEV, dtype=torch.bfloat16)
    v = torch.randn(b, hk, L, d, device=DEV, dtype=torch.bfloat16)
    lens = torch.full((b,), L, device=DEV, dtype=torch.int32)
    dec._PLANS.clear()
    eager, _ = dec.decode_attention(q, k, v, lens, max_seq_len=L, num_splits=2)
    (plan,) = dec._PLANS.values()
    if plan.merge_graph == plan.merge_eager:
        pytest.skip(f"the model places the merge alike here ({plan.merge_graph})")
    _check(eager, dec.decode_attention(q, k, v, lens, max_seq_len=L, num_splits=2)[1], q, k, v, [L] * b, "eager")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        dec.decode_attention(q, k, v, lens, max_seq_len=L, num_splits=2)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out, lse = dec.decode_attention(q, k, v, lens, max_seq_len=L, num_splits=2)
    for n in (L, 1, 200):
        lens.fill_(n)
        g.replay()
        torch.cuda.synchronize()
        _check(out, lse, q, k, v, [n] * b, f"graph L{n}")
