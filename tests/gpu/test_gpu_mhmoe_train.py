"""MH-MoE training on the GPU: the fused GLU passes at full size in bf16, a fwd+bwd with no host sync, and the
layer's training step captured in a CUDA graph and replayed.

Run on the device: PYTHONPATH=src pytest -m gpu tests/gpu/test_gpu_mhmoe_train.py
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

from tilewise.kernels import custom_ops, layers, mhmoe  # noqa: E402


def close(actual, expected, atol, rtol, what):
    a, e = actual.detach().double(), expected.detach().double()
    assert a.shape == e.shape, f"{what}: shape {list(a.shape)} != {list(e.shape)}"
    bad = ~((a - e).abs() <= atol + rtol * e.abs())  # NaN (an unwritten, poisoned element) is bad too
    n = int(bad.sum())
    if n:
        idx = torch.nonzero(bad)[:5].tolist()
        raise AssertionError(
            f"{what}: {n} of {a.numel()} off (first at {idx}), max err {(a - e).abs().max().item():.3g}"
        )


def _poison(monkeypatch):
    real = torch.empty

    def empty(*a, **k):
        t = real(*a, **k)
        return t.fill_(float("nan")) if t.is_floating_point() else t.fill_(-(2**30))

    monkeypatch.setattr(torch, "empty", empty)


@pytest.mark.parametrize("S,f", [(131072, 256), (4099, 100)])
def test_glu_passes_bf16_full_size(monkeypatch, S, f):
    g = torch.Generator(device="cuda").manual_seed(S + f)
    gu = (torch.randn(S, 2 * f, device="cuda", generator=g) * 2).to(torch.bfloat16)
    da = torch.randn(S, f, device="cuda", generator=g).to(torch.bfloat16)
    weights = torch.rand(S, device="cuda", generator=g)
    slot_of = torch.randperm(S, device="cuda", generator=g)
    _poison(monkeypatch)
    a = mhmoe.glu(gu)
    dgu, a2, dw, ws = mhmoe.glu_backward(gu, da, weights, slot_of)
    monkeypatch.undo()
    gu64, da64 = gu.double(), da.double()
    gg, uu = gu64[:, :f], gu64[:, f:]
    sig = torch.sigmoid(gg)
    a64 = gg * sig * uu
    w64 = weights.double()[slot_of]
    # bf16 outputs: one rounding (2^-8 relative) of an fp32 result
    close(a, a64, 1e-2, 8e-3, "glu")
    close(a2, a64, 1e-2, 8e-3, "glu_backward a")
    dg = w64[:, None] * da64 * uu * sig * (1 + gg * (1 - sig))
    du = w64[:, None] * da64 * gg * sig
    close(dgu, torch.cat((dg, du), 1), 1e-2, 8e-3, "dgu")
    dw64 = torch.zeros(S, dtype=torch.float64, device="cuda")
    dw64[slot_of] = (a64 * da64).sum(1)
    close(dw, dw64, 1e-4 * dw64.abs().max().item(), 1e-4, "dweights")
    close(ws, w64, 0, 0, "w_sorted")


def _layer(T=2048, H=8, dh=128, Eh=16, f=128, k=2):
    torch.manual_seed(0)
    layer = layers.MultiHeadMoE(H * dh, H, dh, Eh, f, k, device="cpu", dtype=torch.bfloat16).cuda()
    x = torch.randn(T, H * dh, dtype=torch.bfloat16).cuda()
    dy = torch.randn(T, H * dh, dtype=torch.bfloat16).cuda()
    return layer, x, dy


def _step(layer, x, dy):
    """One training step on fresh leaf aliases (no copy): the captured backward's accumulators live on its stream."""
    names = [n for n, _ in layer.named_parameters()]
    leaves = [t.detach().requires_grad_() for t in (x, *layer.parameters())]
    out = torch.func.functional_call(layer, dict(zip(names, leaves[1:])), (leaves[0],))
    return (out, *torch.autograd.grad(out, leaves, dy))


def test_training_step_makes_no_host_sync():
    layer, x, dy = _layer()
    _step(layer, x, dy)  # compile outside the check
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        _step(layer, x, dy)
        sw = torch.rand(64, 2, device="cuda")
        z = torch.randn(64, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        _, e = mhmoe.route_heads(torch.randn(64, 1, 4, device="cuda"), 2)
        p = mhmoe.plan(sw, e, 4)
        out = custom_ops.moe_experts(z, sw, p.slot_of, p.offsets, layer.w_gate_up[:4], layer.w_down[:4])
        out.sum().backward()
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_training_step_captures_and_replays():
    layer, x, dy = _layer()
    eager = _step(layer, x, dy)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            _step(layer, x, dy)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = _step(layer, x, dy)
    # new inputs in the captured buffers: the replay must follow them (a fresh eager step is the reference)
    with torch.no_grad():
        x.copy_(torch.randn(x.shape, dtype=x.dtype).cuda())
        dy.copy_(torch.randn(dy.shape, dtype=dy.dtype).cuda())
    graph.replay()
    torch.cuda.synchronize()
    want = _step(layer, x, dy)
    for i, (got, ref, old) in enumerate(zip(static, want, eager)):
        scale = ref.float().abs().max().item()
        # the same kernels on the same inputs; the dW kernel's split-row atomics add in any order
        close(got, ref, 1e-2 * scale, 1e-2, f"replayed output {i}")
        assert not torch.equal(got, old), f"output {i} did not change with the inputs"
