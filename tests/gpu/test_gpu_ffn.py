"""FlashFFN and MH-MoE at full size on the GPU (bf16 included), against fp32 references.

Run on the device: PYTHONPATH=src pytest -m gpu tests/gpu/test_gpu_ffn.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import assert_close

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = pytest.mark.gpu

from tilewise.bench.mhmoe_peer import experts_forward_torch  # noqa: E402
from tilewise.kernels import ffn as ff  # noqa: E402
from tilewise.kernels import layers, mhmoe  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the float64 spec beside the CPU tests
from mhmoe_reference import experts_forward_loop  # noqa: E402


def rel(a, b):
    """Largest error relative to the reference's largest magnitude (to size the tolerance)."""
    return ((a.float() - b.float()).abs().max() / b.float().abs().max()).item()


def close(a, ref, tol, what):
    """Every element within tol x the reference's largest magnitude (NaN poison left fails)."""
    assert_close(a, ref, atol=tol * ref.float().abs().max().item(), what=what)


@pytest.fixture(autouse=True)
def _poison_allocations(poison):
    """Every buffer the ops allocate uninitialised starts poisoned (NaN): an unwritten element fails."""
    poison(torch, "empty")


def make(T, H, d, n, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    z = torch.randn(T, H, d, device="cuda", dtype=dtype, generator=g)
    wg = torch.randn(H, d, n, device="cuda", dtype=dtype, generator=g) / d**0.5
    wu = torch.randn(H, d, n, device="cuda", dtype=dtype, generator=g) / d**0.5
    wd = torch.randn(H, n, d, device="cuda", dtype=dtype, generator=g) / n**0.5
    dy = torch.randn(T, H, d, device="cuda", dtype=dtype, generator=g)
    return z, wg, wu, wd, dy


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("T,H,d,n", [(16384, 16, 128, 512), (4099, 16, 64, 500), (333, 3, 128, 1000)])
def test_forward_backward_full_size(T, H, d, n, dtype):
    """Ours may err at most 3x the unfused torch layer in the same dtype (both against fp32)."""
    z, wg, wu, wd, dy = make(T, H, d, n, dtype, seed=T + n)
    ref = [t.float().requires_grad_() for t in (z, wg, wu, wd)]
    y32 = ff.mhffn_unfused(*ref)
    y32.backward(dy.float())
    low = [t.clone().requires_grad_() for t in (z, wg, wu, wd)]
    ylow = ff.mhffn_unfused(*low)
    ylow.backward(dy)
    base = max([rel(ylow, y32)] + [rel(a.grad, b.grad) for a, b in zip(low, ref)])
    tol = max(3 * base, 1e-2)
    ins = [t.clone().requires_grad_() for t in (z, wg, wu, wd)]
    y = ff.flash_ffn(*ins)
    y.backward(dy)
    close(y, y32, tol, "y")
    names = ("dz", "dWg", "dWu", "dWd")
    for name, a, b in zip(names, ins, ref):
        close(a.grad, b.grad, tol, name)
    for mode in ff.MODES:
        for name, g, b in zip(names, ff._bwd(z, wg, wu, wd, dy, mode=mode), ref):
            close(g, b.grad, tol, f"{name} ({mode})")


def test_module_matches_unfused_bf16():
    fused = layers.MultiHeadFFN(2048, 16, 128, 512, device="cuda", dtype=torch.bfloat16)
    unfused = layers.MultiHeadFFN(2048, 16, 128, 512, fused=False, device="cuda", dtype=torch.bfloat16)
    unfused.load_state_dict(fused.state_dict())
    x = torch.randn(4, 1000, 2048, device="cuda", dtype=torch.bfloat16)
    close(fused(x), unfused(x).float(), 2e-2, "y")


@pytest.mark.parametrize("impl", ["fused", "public"])
@pytest.mark.parametrize("T,Eh,f,k", [(4096, 8, 256, 2), (1000, 64, 128, 1)])
def test_mhmoe_forward_bf16(T, Eh, f, k, impl):
    layer = layers.MultiHeadMoE(2048, 16, 128, Eh, f, k, impl=impl, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(T, 2048, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        y = layer(x)
        z, w, e = layer.route(x)
        ref = experts_forward_loop(z.float(), w, e, layer.w_gate_up.float(), layer.w_down.float(), torch.float32)
        ref = ref.reshape(T, -1) @ layer.w_out.float()
        p = mhmoe.plan(w, e, layer.num_experts)
        # torch._grouped_mm refuses 1024 groups or more on torch 2.11 ("Can't process more than 1024 groups")
        peer = (
            None
            if layer.num_experts >= 1024
            else experts_forward_torch(z.contiguous(), p, layer.w_gate_up, layer.w_down)
        )
    close(y, ref, 2e-2, "y")
    if peer is not None:
        close(peer.reshape(T, -1).float() @ layer.w_out.float(), ref, 2e-2, "torch peer")
