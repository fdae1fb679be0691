"""The fused MoE layer under the Triton interpreter against a float64 loop over experts."""

from __future__ import annotations

import pytest
from helpers import assert_close, kernel_device

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels.grouped_gemm import GroupedConfig  # noqa: E402
from tilewise.kernels.moe_layer import moe, moe_reference, permute, route  # noqa: E402

pytestmark = pytest.mark.kernel
DEV = kernel_device()
TOL = {torch.float16: 4e-3, torch.float32: 1e-5}  # relative to max |out|; h is rounded to the dtype


def _inputs(T, d, f, E, dtype, seed=0, bias=None):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, d, generator=g).to(dtype)
    logits = torch.randn(T, E, generator=g)
    if bias is not None:
        logits[:, bias] += 20.0  # every token picks this expert first
    wgu = (torch.randn(E, d, 2 * f, generator=g) / d**0.5).to(dtype)
    wd = (torch.randn(E, f, d, generator=g) / f**0.5).to(dtype)
    return [t.to(DEV) for t in (x, logits, wgu, wd)]


@pytest.fixture(autouse=True)
def _poison_allocations(poison):
    """Buffers the layer allocates uninitialised (h, y, the schedule's scratch) start poisoned."""
    poison(torch, "empty")


def _check(out, ref, dtype):
    scale = max(ref.abs().max().item(), 1.0)
    assert_close(out, ref, atol=TOL[dtype] * scale, what="out")


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
@pytest.mark.parametrize("gate", ["softmax", "sigmoid"])
def test_matches_float64(gate, dtype):
    x, lg, wgu, wd = _inputs(37, 40, 24, 6, dtype, seed=1)  # T, d, d_ff not multiples of the tiles
    out = moe(x, lg, wgu, wd, 2, gate=gate)
    assert out.dtype == dtype
    _check(out, moe_reference(x, lg, wgu, wd, 2, gate=gate), dtype)


@pytest.mark.parametrize("top_k", [1, 8])
def test_top_k_1_and_8(top_k):
    x, lg, wgu, wd = _inputs(19, 32, 16, 8, torch.float32, seed=2)
    _check(moe(x, lg, wgu, wd, top_k), moe_reference(x, lg, wgu, wd, top_k), torch.float32)


def test_all_tokens_to_one_expert_and_empty_experts():
    x, lg, wgu, wd = _inputs(23, 32, 16, 8, torch.float16, seed=3, bias=5)
    _, experts = route(lg, 1)
    assert (experts == 5).all()  # seven experts get no rows at all
    _check(moe(x, lg, wgu, wd, 1), moe_reference(x, lg, wgu, wd, 1), torch.float16)


def test_unnormalized_sigmoid_and_explicit_configs():
    x, lg, wgu, wd = _inputs(21, 24, 40, 5, torch.float32, seed=4)
    cfgs = (GroupedConfig(16, 16, 16, 4, 2, schedule="search", swap_ab=True), GroupedConfig(32, 16, 16, 4, 2, tma=True))
    out = moe(x, lg, wgu, wd, 3, gate="sigmoid", normalize=False, configs=cfgs)
    _check(out, moe_reference(x, lg, wgu, wd, 3, gate="sigmoid", normalize=False), torch.float32)


def test_route_and_permute():
    lg = torch.randn(11, 6)
    w, e = route(lg, 3)
    assert_close(w.sum(-1), torch.ones(11), atol=1e-6, what="weights' sum")
    ref = torch.softmax(lg.gather(1, e), dim=-1)  # softmax -> top-k -> renormalise == softmax of the top-k logits
    assert_close(w, ref, atol=1e-6, what="weights")
    order, offsets = permute(e, 6)
    flat = e.reshape(-1)
    assert (flat[order].diff() >= 0).all()  # expert order
    assert offsets.tolist() == torch.bincount(flat, minlength=6).cumsum(0).tolist()


def test_no_tokens():
    x, lg, wgu, wd = _inputs(0, 16, 8, 4, torch.float32)
    assert moe(x, lg, wgu, wd, 2).shape == (0, 16)


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda a: {**a, "top_k": 0}, r"top_k must be an integer in \[1, 4\]"),
        (lambda a: {**a, "top_k": 5}, r"top_k must be an integer in \[1, 4\]"),
        (lambda a: {**a, "gate": "relu"}, "gate must be one of"),
        (lambda a: {**a, "w_down": a["w_down"][:, :3]}, r"w_down must have shape \[4, 8, 16\]"),
        (lambda a: {**a, "w_gate_up": a["w_gate_up"][..., :15]}, "w_gate_up must have shape"),
        (lambda a: {**a, "router_logits": a["router_logits"][:, :3]}, r"router_logits must have shape \[9, 4\]"),
        (lambda a: {**a, "w_down": a["w_down"].half()}, "w_down must have the dtype of x"),
        (lambda a: {**a, "w_gate_up": a["w_gate_up"].half()}, "w_gate_up must have the dtype of x"),
        (
            lambda a: {**a, "x": a["x"].int(), "w_gate_up": a["w_gate_up"].int(), "w_down": a["w_down"].int()},
            "x must be float16",
        ),
        (lambda a: {**a, "x": a["x"][None]}, r"x must have shape \[tokens, d_model\]"),
    ],
    ids=[
        "k0",
        "k-too-big",
        "gate",
        "w_down",
        "odd-gate-up",
        "logits",
        "w_down-dtype",
        "w_gate_up-dtype",
        "int-x",
        "x-3d",
    ],
)
def test_bad_inputs(mutate, match):
    x, lg, wgu, wd = _inputs(9, 16, 8, 4, torch.float32)
    a = mutate(dict(x=x, router_logits=lg, w_gate_up=wgu, w_down=wd, top_k=2, gate="softmax"))
    with pytest.raises(InputError, match=match):
        moe(a["x"], a["router_logits"], a["w_gate_up"], a["w_down"], a["top_k"], gate=a["gate"])
