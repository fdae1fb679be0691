"""MH-MoE (per-(token, head) routing on the grouped GEMM) under the Triton interpreter, float64 reference."""

import pytest
from helpers import assert_close

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from mhmoe_reference import experts_forward_loop  # noqa: E402

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels import layers, mhmoe  # noqa: E402

pytestmark = pytest.mark.kernel


@pytest.fixture(autouse=True)
def _poison_allocations(poison):
    """Buffers the layer allocates uninitialised start poisoned (NaN): an unwritten element shows up."""
    poison(torch, "empty")


def close(a, ref, tol, what="y"):
    """Every element within tol x the reference's largest magnitude."""
    assert_close(a, ref, atol=tol * ref.double().abs().max().item(), what=what)


def reference(layer, x):
    """The layer in float64: same routing (computed from the layer's own z), a loop over experts."""
    with torch.no_grad():
        z, w, e = layer.route(x)
        y = experts_forward_loop(z.double(), w, e, layer.w_gate_up.double(), layer.w_down.double(), dtype=torch.float64)
        return y.reshape(x.shape[0], -1) @ layer.w_out.double()


def test_route_heads_stays_in_each_heads_experts():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(7, 3, 5, generator=g)
    w, e = mhmoe.route_heads(logits, 2)
    assert w.shape == e.shape == (21, 2)
    head = torch.arange(3).repeat(7)  # row t * H + h belongs to head h
    assert ((e // 5) == head[:, None]).all()
    assert_close(w.sum(-1), torch.ones(21), atol=1e-6, what="weights' sum")
    # the top-2 of each row, in order
    top = torch.topk(logits.reshape(21, 5), 2, dim=-1).indices
    assert (e % 5 == top).all()


def test_plan_sorts_slots_by_expert():
    w = torch.tensor([[0.6, 0.4], [0.7, 0.3], [1.0, 0.0]])
    e = torch.tensor([[3, 0], [0, 1], [3, 1]])
    p = mhmoe.plan(w, e, 4)
    assert p.offsets.tolist() == [2, 4, 4, 6]
    assert e.reshape(-1)[p.slot_of.long()].tolist() == [0, 0, 1, 1, 3, 3]
    assert (p.token_of.long() == p.slot_of.long() // 2).all()
    assert_close(p.scale, w.reshape(-1)[p.slot_of.long()], atol=0, what="scale")


@pytest.mark.parametrize(
    "T,H,d,Eh,f,k,impl,dtype",
    [
        (37, 3, 64, 4, 40, 2, "fused", torch.float32),
        (19, 2, 128, 3, 24, 1, "fused", torch.float16),
        (23, 2, 64, 5, 33, 3, "public", torch.float32),
    ],
)
def test_forward_matches_float64(T, H, d, Eh, f, k, impl, dtype):
    layer = layers.MultiHeadMoE(48, H, d, Eh, f, k, impl=impl, dtype=dtype)
    x = torch.randn(T, 48, dtype=dtype)
    with torch.no_grad():
        y = layer(x)
    assert y.shape == (T, 48) and y.dtype == dtype
    close(y, reference(layer, x), 2e-5 if dtype == torch.float32 else 1e-2)


def test_training_falls_back_to_a_differentiable_path():
    layer = layers.MultiHeadMoE(32, 2, 64, 3, 16, 2)
    x = torch.randn(9, 32)
    y = layer(x)
    y.square().mean().backward()
    assert all(p.grad is not None for p in (layer.w_in, layer.w_gate_up, layer.w_down, layer.w_out, layer.w_router))
    with torch.no_grad():
        close(layer(x), y.detach(), 2e-5)  # fused forward == fallback forward


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(top_k=5), "top_k must be an integer <= 4"),
        (dict(heads=0), "heads must be an integer >= 1"),
        (dict(impl="cuda"), "impl must be one of"),
    ],
)
def test_bad_arguments(kw, match):
    args = dict(d_model=32, heads=2, head_dim=64, experts_per_head=4, expert_width=16, top_k=2)
    args.update(kw)
    with pytest.raises(InputError, match=match):
        layers.MultiHeadMoE(**args)


def test_bad_input_shape():
    layer = layers.MultiHeadMoE(32, 2, 64, 4, 16, 2)
    with pytest.raises(InputError, match=r"x must have shape \[..., 32\]"):
        layer(torch.randn(3, 33))
