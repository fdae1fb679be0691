"""MH-MoE's backward on the grouped GEMMs, under the Triton interpreter, against float64 autograd.

The reference is torch's autograd through the float64 loop over experts (tests/mhmoe_reference.py)
with the same routing decisions; inputs are fresh seeded random tensors, awkward sizes (rows per
expert 0, 1 and uneven; T 1, 7, 11), fp32 and fp16 with per-dtype tolerances.
"""

from __future__ import annotations

import pytest
from helpers import kernel_device

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = pytest.mark.kernel

from mhmoe_reference import experts_forward_loop  # noqa: E402

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels import grouped_dw, layers, mhmoe, moe_layer  # noqa: E402

DEV = kernel_device()
# fp32: the interpreter's dots are fp32 (1e-6 relative); the elementwise GLU backward runs in fp32.
# fp16: inputs and the [S, 2 f] activation rounded to fp16 (2^-11 relative), reductions of <= 64 terms.
TOL = {torch.float32: (2e-5, 2e-4), torch.float16: (2e-2, 2e-2)}


def close(actual, expected, dtype, what, scale=1.0):
    """Every element within atol + rtol |e| (atol relative to the reference's largest magnitude)."""
    atol, rtol = TOL[dtype]
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    assert a.shape == e.shape, f"{what}: shape {list(a.shape)} != {list(e.shape)}"
    # a floor of 0.01 on the scale: a gradient that is exactly 0 in float64 (the router's at top_k 1,
    # where the renormalised weight is 1) comes out as fp32 rounding noise (~1e-8)
    ref = max(e.abs().max().item(), 1e-2)
    bad = ~((a - e).abs() <= atol * scale * ref + rtol * e.abs())
    n = int(bad.sum())
    if n:
        idx = torch.nonzero(bad)[:5].tolist()
        err = (a - e).abs().max().item()
        raise AssertionError(
            f"{what}: {n} of {a.numel()} elements off (first at {idx}), max abs err {err:.3g} (max |ref| {ref:.3g})"
        )


# ----------------------------------------------------------------------- grouped dW kernel


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("counts", [[5, 0, 1, 17], [0, 0, 7], [64, 3]])
@pytest.mark.parametrize("variant", ["plain", "gather-scale", "split"])
def test_grouped_dw_matches_float64(dtype, counts, variant):
    g = torch.Generator().manual_seed(len(counts) * 100 + sum(counts))
    rows, E, K, N = sum(counts), len(counts), 24, 40  # K, N not multiples of the interpreter's 32 tiles
    offsets = torch.tensor(counts).cumsum(0).to(torch.int32)
    kw, k = {}, 2
    x = torch.randn(rows, K, generator=g)
    dy = torch.randn(rows, N, generator=g)
    xs, dys = x, dy
    if variant == "gather-scale":
        # sorted row r reads x row gather[r] // 2 (a top-2 MoE's token) and dy row gather[r] // 2 scaled
        x = torch.randn(-(-rows // k), K, generator=g)
        dy = torch.randn(-(-rows // k), N, generator=g)
        gather = torch.randperm(rows, generator=g).to(torch.int32)
        scale = torch.rand(rows, generator=g)
        kw = dict(x_gather=gather, dy_gather=gather, gather_div=k, dy_scale=scale)
        xs, dys = x[gather.long() // k], dy[gather.long() // k] * scale[:, None]
    elif variant == "split":
        kw = dict(splits=3)
    # data in the tested dtype; gather indices int32 and the routing scale fp32, as the MoE backward passes them
    on = {n: t.to(DEV) for n, t in kw.items() if isinstance(t, torch.Tensor)}
    got = grouped_dw.grouped_matmul_dw(x.to(DEV, dtype), dy.to(DEV, dtype), offsets.to(DEV), **{**kw, **on})
    assert got.shape == (E, K, N) and got.dtype == dtype
    e = torch.repeat_interleave(torch.arange(E), torch.tensor(counts))
    want = torch.zeros(E, K, N, dtype=torch.float64)
    xs64, dys64 = xs.to(dtype).double(), dys.to(dtype).double()
    want.index_add_(0, e, xs64[:, :, None] * dys64[:, None, :])
    close(got, want, dtype, f"dw {variant}")
    for i, c in enumerate(counts):
        if c == 0:
            assert (got[i] == 0).all(), f"expert {i} got no rows: its gradient must be exactly 0"


def test_grouped_dw_refuses_bad_input():
    x, dy, off = torch.randn(4, 8), torch.randn(5, 8), torch.tensor([4], dtype=torch.int32)
    with pytest.raises(InputError, match="x and dy must have the same rows, got 4 and 5"):
        grouped_dw.grouped_matmul_dw(x, dy, off)
    with pytest.raises(InputError, match="offsets must be int32"):
        grouped_dw.grouped_matmul_dw(x, x, off.long())


# ----------------------------------------------------------------------- experts backward


def _route(R, k, E, g):
    logits = torch.randn(R, E, generator=g)
    w, e = moe_layer.route(logits, k)
    return w, e


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("R,k,E,d,f", [(1, 1, 3, 16, 8), (7, 2, 4, 24, 40), (11, 3, 5, 32, 16)])
@pytest.mark.parametrize("keep", [True, False])
def test_experts_backward_matches_float64_autograd(dtype, R, k, E, d, f, keep):
    g = torch.Generator().manual_seed(R * 1000 + k * 100 + E + (0 if keep else 7))
    w, e = _route(R, k, E, g)
    p = mhmoe.plan(w, e, E)
    z = torch.randn(R, d, generator=g).to(dtype)
    wgu = (torch.randn(E, d, 2 * f, generator=g) / d**0.5).to(dtype)
    wd = (torch.randn(E, f, d, generator=g) / f**0.5).to(dtype)
    dout = torch.randn(R, d, generator=g).to(dtype)
    on = lambda t: t.to(DEV)  # noqa: E731
    sw = w.view(R, k)
    if keep:
        out, gu = mhmoe.experts_forward_train(on(z), on(sw), on(p.slot_of), on(p.offsets), on(wgu), on(wd))
    else:
        out = mhmoe.experts_forward(on(z), on(sw), on(p.slot_of), on(p.offsets), on(wgu), on(wd))
        gu = on(torch.empty(0, 2 * f, dtype=dtype))  # the backward recomputes the gate/up GEMM
    dz, dsw, dwgu, dwd = mhmoe.experts_backward(
        on(dout), on(z), on(sw), on(p.slot_of), on(p.offsets), on(wgu), on(wd), gu
    )
    z64, w64, wgu64, wd64 = (t.double().requires_grad_() for t in (z, sw, wgu, wd))
    ref = experts_forward_loop(z64, w64, e, wgu64, wd64, dtype=torch.float64)
    grads = torch.autograd.grad(ref, (z64, w64, wgu64, wd64), dout.double())
    close(out, ref, dtype, "out")
    for got, want, what in zip((dz, dsw, dwgu, dwd), grads, ("dz", "dweights", "dw_gate_up", "dw_down")):
        close(got, want, dtype, what)
    assert dsw.dtype == torch.float32 and dz.dtype == dwgu.dtype == dwd.dtype == dtype


# ----------------------------------------------------------------------- the layer


def _layer_reference(layer, x):
    """The layer in float64 with the layer's own routing decisions (top-k ties cannot flip)."""
    with torch.no_grad():
        _, _, experts = layer.route(x)
    params = {n: p.detach().double().requires_grad_() for n, p in layer.named_parameters()}
    x64 = x.detach().double().requires_grad_()
    T, H, dh, Eh = x.shape[0], layer.heads, layer.head_dim, layer.experts_per_head
    z = x64 @ params["w_in"]
    logits = torch.bmm(z.view(T, H, dh).transpose(0, 1), params["w_router"]).transpose(0, 1)  # [T, H, E_h]
    scores = torch.softmax(logits, -1).reshape(T * H, Eh)
    local = (experts.cpu() % Eh).long()
    w = scores.gather(1, local)
    w = w / w.sum(-1, keepdim=True)
    y = experts_forward_loop(z.reshape(T * H, dh), w, experts.cpu(), params["w_gate_up"], params["w_down"])
    out = y.reshape(T, H * dh) @ params["w_out"]
    return out, x64, params


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("impl", ["fused", "public"])
@pytest.mark.parametrize("T,H,dh,Eh,f,k", [(7, 2, 16, 3, 24, 2), (1, 3, 32, 4, 8, 1), (11, 2, 24, 5, 16, 3)])
def test_layer_backward_matches_float64(dtype, impl, T, H, dh, Eh, f, k):
    torch.manual_seed(T * 10 + k)
    layer = layers.MultiHeadMoE(40, H, dh, Eh, f, k, impl=impl, device=DEV, dtype=dtype)
    x = torch.randn(T, 40, device=DEV, dtype=dtype, requires_grad=True)
    dy = torch.randn(T, 40, device=DEV, dtype=dtype)
    out = layer(x)
    out.backward(dy)
    ref, x64, params = _layer_reference(layer, x)
    ref.backward(dy.double().cpu())
    close(out, ref, dtype, "out")
    close(x.grad, x64.grad, dtype, "dx")
    for n, p in layer.named_parameters():
        close(p.grad, params[n].grad, dtype, f"d{n}")


def test_layer_forward_is_the_same_with_and_without_autograd():
    torch.manual_seed(3)
    layer = layers.MultiHeadMoE(32, 2, 16, 4, 24, 2, device=DEV)
    x = torch.randn(9, 32, device=DEV)
    y_train = layer(x)  # training path: unfused GLU, activation kept
    with torch.no_grad():
        y_inf = layer(x)  # inference path: GLU fused in the grouped GEMM's epilogue
    close(y_inf, y_train.detach(), torch.float32, "inference vs training forward")


def test_compiled_layer_trains_fullgraph():
    import torch._dynamo

    torch._dynamo.reset()
    torch.manual_seed(5)
    layer = layers.MultiHeadMoE(32, 2, 16, 3, 8, 2, device=DEV)
    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    x = torch.randn(6, 32, device=DEV, requires_grad=True)
    compiled(x).square().sum().backward()
    got = [p.grad.clone() for p in layer.parameters()] + [x.grad.clone()]
    layer.zero_grad()
    x2 = x.detach().requires_grad_()
    layer(x2).square().sum().backward()
    for a, b in zip(got, [p.grad for p in layer.parameters()] + [x2.grad]):
        close(a, b, torch.float32, "compiled vs eager gradient")
