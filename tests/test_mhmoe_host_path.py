"""MH-MoE's lean host path and its fused GLU passes, under the Triton interpreter, float64 references.

* `glu` / `glu_backward`: one Triton pass each way for SiLU * mul and its backward (with the routing weight's
  gradient), every element of every output checked against float64 autograd, outputs poisoned (NaN) first.
* `route_heads`: top-k of the logits then a softmax over the kept k equals the E_h-wide softmax renormalised.
* `experts_forward`: checks once per signature, the cached plan gives the float64 loop's answer for int32 and
  int64 slot orders, bad input is refused with an InputError on a first call and on a call after a cached one.
* the layer's forward: how many torch kernels and Triton launches one call makes (the host cost on the H200 is
  ~10 us a launch), so a regression shows here before it shows on the GPU.
"""

from __future__ import annotations

import collections

import pytest
from helpers import assert_close

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from mhmoe_reference import experts_forward_loop  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels import custom_ops, layers, mhmoe, moe_layer, utils  # noqa: E402

pytestmark = pytest.mark.kernel

TOL = {torch.float32: 1e-5, torch.float16: 2e-3}  # relative to the reference's largest magnitude


@pytest.fixture
def poisoned(poison):
    """Every buffer the code under test allocates with torch.empty starts NaN: an unwritten element shows."""
    poison(torch, "empty")


def _glu64(gu: torch.Tensor) -> torch.Tensor:
    f = gu.shape[1] // 2
    g, u = gu[:, :f], gu[:, f:]
    return torch.nn.functional.silu(g) * u


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("S,f", [(1, 1), (7, 40), (127, 7), (33, 100)])
def test_glu_matches_float64(poisoned, dtype, S, f):
    g = torch.Generator().manual_seed(S * 1000 + f)
    gu = (torch.randn(S, 2 * f, generator=g) * 2).to(dtype)
    a = mhmoe.glu(gu)
    ref = _glu64(gu.double())
    assert a.shape == (S, f) and a.dtype == dtype
    assert_close(a, ref, atol=TOL[dtype] * ref.abs().max().item(), rtol=TOL[dtype], what="silu(g) u")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("S,f", [(1, 3), (7, 40), (127, 33), (50, 64)])
@pytest.mark.parametrize("index", [torch.int32, torch.int64])
def test_glu_backward_matches_float64_autograd(poisoned, dtype, S, f, index):
    g = torch.Generator().manual_seed(S * 100 + f + (0 if index == torch.int32 else 1))
    gu = (torch.randn(S, 2 * f, generator=g) * 2).to(dtype)
    da = torch.randn(S, f, generator=g).to(dtype)
    weights = torch.rand(S, generator=g)  # slot order
    slot_of = torch.randperm(S, generator=g).to(index)  # sorted position r holds slot slot_of[r]
    dgu, a, dw, w_sorted = mhmoe.glu_backward(gu, da, weights, slot_of)
    # float64 autograd of  L = sum_r w[slot_of[r]] <a_r, da_r>,  a = silu(g) u
    gu64 = gu.double().requires_grad_()
    w64 = weights.double().requires_grad_()
    a64 = _glu64(gu64)
    ws64 = w64[slot_of.long()]
    loss = (ws64[:, None] * a64 * da.double()).sum()
    dgu64, dw64 = torch.autograd.grad(loss, (gu64, w64))
    tol = TOL[dtype]
    assert dgu.dtype == a.dtype == dtype and dw.dtype == w_sorted.dtype == torch.float32
    assert_close(dgu, dgu64, atol=tol * dgu64.abs().max().item(), rtol=tol, what="dgu")
    assert_close(a, a64.detach(), atol=tol * a64.abs().max().item(), rtol=tol, what="a")
    # the routing weight's gradient sums S... f terms of fp32 products of rounded inputs: relative to its scale
    assert_close(dw, dw64, atol=1e-5 * max(dw64.abs().max().item(), 1.0), rtol=1e-5, what="dweights")
    assert_close(w_sorted, weights[slot_of.long()], atol=0, what="w_sorted")


def test_route_heads_equals_the_renormalised_wide_softmax():
    g = torch.Generator().manual_seed(11)
    T, H, Eh, k = 9, 3, 7, 3
    logits = torch.randn(T, H, Eh, generator=g)
    w, e = mhmoe.route_heads(logits, k)
    wide = torch.softmax(logits.double(), dim=-1).reshape(T * H, Eh)
    local = e - (torch.arange(T * H) % H)[:, None] * Eh
    ref = wide.gather(1, local)
    ref = ref / ref.sum(-1, keepdim=True)
    assert w.dtype == torch.float32 and e.dtype == torch.int64
    assert_close(w, ref, atol=1e-6, rtol=1e-6, what="weights")
    assert (local == torch.topk(logits.reshape(T * H, Eh), k, dim=-1).indices).all()


def _experts_inputs(g, R, k, E, d, f, dtype, index=torch.int64):
    w, e = moe_layer.route(torch.randn(R, E, generator=g), k)
    p = mhmoe.plan(w, e, E)
    z = torch.randn(R, d, generator=g).to(dtype)
    wgu = (torch.randn(E, d, 2 * f, generator=g) / d**0.5).to(dtype)
    wd = (torch.randn(E, f, d, generator=g) / f**0.5).to(dtype)
    return (z, w, p.slot_of.to(index), p.offsets, wgu, wd), e


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("index", [torch.int32, torch.int64])
@pytest.mark.parametrize("R,k,E,d,f", [(1, 1, 3, 16, 8), (7, 2, 4, 24, 40), (13, 3, 5, 32, 16)])
def test_experts_forward_matches_float64_loop_and_checks_once(poisoned, monkeypatch, dtype, index, R, k, E, d, f):
    g = torch.Generator().manual_seed(R * 10 + k + (5 if index == torch.int32 else 0))
    args, experts = _experts_inputs(g, R, k, E, d, f, dtype, index)
    calls = []
    monkeypatch.setattr(mhmoe, "_FWD_PLANS", utils.PlanCache())  # an empty cache: other tests' plans do not count
    real = mhmoe.check_experts
    monkeypatch.setattr(mhmoe, "check_experts", lambda *a: calls.append(1) or real(*a))
    z, w, _, _, wgu, wd = args
    ref = experts_forward_loop(z.double(), w.double(), experts, wgu.double(), wd.double(), dtype=torch.float64)
    for call in range(2):
        out = mhmoe.experts_forward(*args)
        assert out.dtype == dtype and out.shape == (R, d)
        assert_close(out, ref, atol=TOL[dtype] * 4 * ref.abs().max().item(), what=f"out (call {call})")
    assert len(calls) == 1, "the second call with the same signature must reuse the checked plan"


def test_experts_forward_refuses_bad_input_before_and_after_a_cached_call():
    g = torch.Generator().manual_seed(3)
    args, _ = _experts_inputs(g, 6, 2, 3, 16, 8, torch.float32)
    z, w, slot_of, offsets, wgu, wd = args
    bad = {
        "slot_of must be int32 or int64": (z, w, slot_of.float(), offsets, wgu, wd),
        "offsets must be int32": (z, w, slot_of, offsets.long(), wgu, wd),
        "w_down must have shape": (z, w, slot_of, offsets, wgu, wd[:, :4]),
        "z must be float16, bfloat16 or float32": (z.double(), w, slot_of, offsets, wgu.double(), wd.double()),
        "slot_weights must be a float tensor": (z, slot_of.view(6, 2), slot_of, offsets, wgu, wd),
        "must be on one device": (z, w, slot_of, offsets.to("meta"), wgu, wd),
        "z must be a torch tensor": (z.tolist(), w, slot_of, offsets, wgu, wd),
    }
    for first in (True, False):
        if not first:
            mhmoe.experts_forward(*args)  # a good call: its plan is cached, the bad ones differ in signature
        for message, call in bad.items():
            with pytest.raises(InputError, match=message):
                mhmoe.experts_forward(*call)
            with pytest.raises(InputError, match=message):
                custom_ops.moe_experts(*call)


def test_opcheck_moe_experts_with_int32_slots():
    g = torch.Generator().manual_seed(4)
    args, _ = _experts_inputs(g, 6, 2, 3, 16, 8, torch.float32, torch.int32)
    z, w, slot_of, offsets, wgu, wd = args
    grads = [t.clone().requires_grad_() for t in (z, w, wgu, wd)]
    torch.library.opcheck(torch.ops.tilewise.moe_experts, (grads[0], grads[1], slot_of, offsets, *grads[2:], True))


class _Count(TorchDispatchMode):
    """Every aten op dispatched, by name."""

    def __init__(self):
        super().__init__()
        self.ops = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


# metadata ops and allocations: no kernel on the GPU (allocations are counted apart)
_NO_KERNEL = {"view", "_unsafe_view", "transpose", "reshape", "t", "expand", "alias", "detach", "slice", "select",
              "unsqueeze", "squeeze", "permute", "as_strided", "_reshape_alias"}  # fmt: skip


def test_layer_forward_launch_count(monkeypatch):
    """One inference call of the fused layer: 11 torch kernels and 2 Triton launches.

    W_in, the router bmm, top-k, the fp32 cast and softmax of the k kept logits, the head offset, the sort
    (int16 keys, sort, searchsorted), the k-sum and W_out; the two grouped GEMMs. It was 19 torch kernels
    and 3 TMA descriptors before the lean host path (the H200's host: 609.5 us vs 584.5 for the peer)."""
    torch.manual_seed(0)
    layer = layers.MultiHeadMoE(128, 2, 64, 4, 64, 2, dtype=torch.float16)
    x = torch.randn(32, 128, dtype=torch.float16)
    with torch.no_grad():
        layer(x)  # compiles, plans
        launches = []
        monkeypatch.setattr(utils.Launcher, "__call__", lambda self, *a: launches.append(self.kernel.fn.__name__))
        with _Count() as c:
            layer(x)
    kernels = {n: v for n, v in c.ops.items() if n not in _NO_KERNEL and n not in ("empty", "empty_strided")}
    assert kernels == {"mm": 2, "bmm": 1, "topk": 1, "_to_copy": 2, "_softmax": 1, "add": 1, "sort": 1,
                       "searchsorted": 1, "sum": 1}, kernels  # fmt: skip
    assert launches == ["_grouped_mm_kernel", "_grouped_mm_kernel"]
    # h, y and the two GEMMs' in-kernel prefix scratch
    assert c.ops["empty"] + c.ops["empty_strided"] == 4


def test_backward_fills_no_gradient_for_the_kept_activation():
    """The custom op's second output (the gate/up activation kept for the backward) gets no zero-filled
    gradient: at T 4096 H 16 f 256 k 2 that fill was a 128 MiB memset per training step on the H200."""
    g = torch.Generator().manual_seed(8)
    args, experts = _experts_inputs(g, 9, 2, 3, 16, 8, torch.float32)
    z, w, slot_of, offsets, wgu, wd = args
    leaves = [t.clone().requires_grad_() for t in (z, w, wgu, wd)]
    out = custom_ops.moe_experts(leaves[0], leaves[1], slot_of, offsets, leaves[2], leaves[3])
    dout = torch.randn(out.shape, generator=g)
    with _Count() as c:
        grads = torch.autograd.grad(out, leaves, dout)
    fills = {n: v for n, v in c.ops.items() if n in ("zeros", "zeros_like", "new_zeros", "fill_", "zero_")}
    assert not fills, fills
    z64, w64, wgu64, wd64 = (t.double().requires_grad_() for t in (z, w, wgu, wd))
    ref = experts_forward_loop(z64, w64, experts, wgu64, wd64, dtype=torch.float64)
    for got, want, what in zip(grads, torch.autograd.grad(ref, (z64, w64, wgu64, wd64), dout.double()),
                               ("dz", "dweights", "dw_gate_up", "dw_down")):  # fmt: skip
        assert_close(got, want, atol=1e-4 * max(want.abs().max().item(), 1e-2), rtol=1e-4, what=what)
