"""FlashFFN under the Triton interpreter against a float64 reference (TRITON_INTERPRET=1).

Outputs and all four gradients on small, awkward shapes (T and I not multiples of the tiles),
d_h 64 and 128, fp16 and fp32 (the interpreter computes bf16 wrongly: bf16 is in tests/gpu);
outputs poisoned with NaN so every element must be written; bad inputs -> InputError; and the
the end-to-end check: a tiny model trains a few steps and its loss matches the unfused layer's.
"""

import pytest
from helpers import assert_close

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels import ffn as ff  # noqa: E402
from tilewise.kernels import layers  # noqa: E402

pytestmark = pytest.mark.kernel

# Largest error allowed, relative to the reference's largest magnitude, beside the error of the
# same layer run by torch in the input dtype ("no worse than eager in low precision").
TOL = {torch.float32: 2e-5, torch.float16: 4e-3}


def rel(a, b):
    """Largest error relative to the reference's largest magnitude (to size the fp16 tolerance)."""
    return ((a.double() - b.double()).abs().max() / b.double().abs().max()).item()


def close(a, ref, tol, what):
    """Every element within tol x the reference's largest magnitude (NaN poison left fails)."""
    assert_close(a, ref, atol=tol * ref.double().abs().max().item(), what=what)


def make(T, H, d, n, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(T, H, d, generator=g).to(dtype)
    wg = (torch.randn(H, d, n, generator=g) / d**0.5).to(dtype)
    wu = (torch.randn(H, d, n, generator=g) / d**0.5).to(dtype)
    wd = (torch.randn(H, n, d, generator=g) / n**0.5).to(dtype)
    dy = torch.randn(T, H, d, generator=g).to(dtype)
    return z, wg, wu, wd, dy


def reference(z, wg, wu, wd, dy):
    ins = [t.double().requires_grad_() for t in (z, wg, wu, wd)]
    y = ff.mhffn_unfused(*ins)
    y.backward(dy.double())
    return y.detach(), [t.grad for t in ins]


def lowp_error(z, wg, wu, wd, dy, y64, g64):
    """Error of the unfused torch layer in the inputs' own dtype (fp16 matmuls on the CPU)."""
    ins = [t.clone().requires_grad_() for t in (z, wg, wu, wd)]
    y = ff.mhffn_unfused(*ins)
    y.backward(dy)
    return max([rel(y.detach(), y64)] + [rel(t.grad, r) for t, r in zip(ins, g64)])


@pytest.fixture(autouse=True)
def _poison_allocations(poison):
    """Kernel outputs start poisoned (NaN): an element the kernel forgets to write shows up."""
    poison(ff, "_empty")


CASES = [
    # T, H, d_h, I, dtype: T and I off the tiles (128 x 64), one head, several heads, one token
    (37, 2, 64, 70, torch.float32),
    (130, 1, 128, 64, torch.float16),
    (5, 3, 64, 200, torch.float16),
    (1, 1, 128, 1, torch.float32),
    (67, 2, 128, 33, torch.float32),
    (256, 1, 64, 128, torch.float16),  # every tile full: the mask-free paths
]


@pytest.mark.parametrize("T,H,d,n,dtype", CASES)
def test_forward_and_gradients_match_float64(T, H, d, n, dtype):
    z, wg, wu, wd, dy = make(T, H, d, n, dtype, seed=T * 7 + n)
    y64, g64 = reference(z, wg, wu, wd, dy)
    tol = max(TOL[dtype], 2 * lowp_error(z, wg, wu, wd, dy, y64, g64)) if dtype == torch.float16 else TOL[dtype]
    y = ff._fwd(z, wg, wu, wd)
    assert y.dtype == dtype and y.shape == (T, H, d)
    close(y, y64, tol, "y")
    for mode in ff.MODES:
        grads = ff._bwd(z, wg, wu, wd, dy, mode=mode)
        for name, g, r, src in zip(("dz", "dWg", "dWu", "dWd"), grads, g64, (z, wg, wu, wd)):
            assert g.shape == src.shape and g.dtype == dtype, name
            close(g, r, tol, f"{name} ({mode})")


def test_autograd_function_and_strided_input():
    """flash_ffn through autograd, with z a strided view (heads-first storage, transposed)."""
    T, H, d, n = 45, 2, 64, 96
    z0, wg, wu, wd, dy = make(T, H, d, n, torch.float32, seed=3)
    zh = z0.transpose(0, 1).contiguous().requires_grad_()  # [H, T, d] storage
    ws = [w.clone().requires_grad_() for w in (wg, wu, wd)]
    z = zh.transpose(0, 1)  # [T, H, d] view, token stride d
    y = ff.flash_ffn(z, *ws)
    y.backward(dy)
    y64, g64 = reference(z0, wg, wu, wd, dy)
    close(y.detach(), y64, TOL[torch.float32], "y")
    close(zh.grad.transpose(0, 1), g64[0], TOL[torch.float32], "dz")
    for name, w, r in zip(("dWg", "dWu", "dWd"), ws, g64[1:]):
        close(w.grad, r, TOL[torch.float32], name)


def test_public_import_and_weights_only_gradient():
    """`from tilewise.kernels import flash_ffn` is callable; z without grad skips the dz kernel."""
    from tilewise.kernels import flash_ffn

    z, wg, wu, wd, dy = make(9, 1, 64, 20, torch.float32, seed=4)
    ws = [w.clone().requires_grad_() for w in (wg, wu, wd)]
    flash_ffn(z, *ws).backward(dy)
    _, g64 = reference(z, wg, wu, wd, dy)
    for name, w, r in zip(("dWg", "dWu", "dWd"), ws, g64[1:]):
        close(w.grad, r, TOL[torch.float32], name)
    assert ff._bwd(z, wg, wu, wd, dy, need_dz=False)[0] is None
    # frozen weights: only dz
    zr = z.clone().requires_grad_()
    flash_ffn(zr, wg, wu, wd).backward(dy)
    close(zr.grad, g64[0], TOL[torch.float32], "dz")
    assert ff._bwd(z, wg, wu, wd, dy, mode="atomic", need_dw=False)[1:] == (None, None, None)


def test_dw_token_splits_sum_to_the_full_gradient():
    """Many token blocks and few I chunks: the dW kernel splits the tokens and sums fp32 partials."""
    cfg = ff.Config(16, 64, 4, 2)
    assert ff.dw_splits(192, 1, 64, cfg, 132) > 1
    z, wg, wu, wd, dy = make(192, 1, 64, 64, torch.float32, seed=5)
    _, g64 = reference(z, wg, wu, wd, dy)
    grads = ff._bwd(z, wg, wu, wd, dy, mode="split", dw_cfg=cfg)
    for name, g, r in zip(("dz", "dWg", "dWu", "dWd"), grads, g64):
        close(g, r, TOL[torch.float32], name)


def test_zero_tokens():
    z, wg, wu, wd, dy = make(0, 2, 64, 16, torch.float32)
    assert ff._fwd(z, wg, wu, wd).shape == (0, 2, 64)
    dz, dwg, dwu, dwd = ff._bwd(z, wg, wu, wd, dy)
    assert dz.shape == (0, 2, 64) and float(dwg.abs().sum() + dwu.abs().sum() + dwd.abs().sum()) == 0.0


@pytest.mark.parametrize(
    "change,match",
    [
        (lambda z, wg, wu, wd: (z[0], wg, wu, wd), "z must have shape"),
        (lambda z, wg, wu, wd: (torch.zeros(4, 2, 96), wg, wu, wd), "head_dim must be one of"),
        (lambda z, wg, wu, wd: (z.double(), wg, wu, wd), "z must be one of"),
        (lambda z, wg, wu, wd: (z, wg.half(), wu, wd), "w_gate must have z's dtype"),
        (lambda z, wg, wu, wd: (z, wg[:1], wu, wd), r"w_gate must have shape \[2, 64, intermediate\]"),
        (lambda z, wg, wu, wd: (z, wg, wu[:, :, :5], wd), r"w_up must have shape \[2, 64, 16\]"),
        (lambda z, wg, wu, wd: (z, wg, wu, wd.transpose(1, 2)), r"w_down must have shape \[2, 16, 64\]"),
        (lambda z, wg, wu, wd: (z, wg.numpy(), wu, wd), "w_gate must be a torch.Tensor"),
    ],
)
def test_bad_inputs_raise_input_error(change, match):
    z, wg, wu, wd, _ = make(4, 2, 64, 16, torch.float32)
    with pytest.raises(InputError, match=match):
        ff.flash_ffn(*change(z, wg, wu, wd))


def test_module_rejects_bad_sizes():
    with pytest.raises(InputError, match="head_dim must be one of"):
        layers.MultiHeadFFN(32, 2, 48, 64)
    with pytest.raises(InputError, match="heads must be an integer"):
        layers.MultiHeadFFN(32, 0, 64, 64)
    layer = layers.MultiHeadFFN(32, 1, 64, 16)
    with pytest.raises(InputError, match=r"x must have shape \[..., 32\]"):
        layer(torch.randn(3, 31))


def test_tiny_model_trains_like_the_unfused_layer():
    """End to end: a few SGD steps of a tiny model; losses match the unfused layer's."""
    d_model, T = 32, 24

    def model(fused):
        torch.manual_seed(1)
        return torch.nn.Sequential(
            torch.nn.Linear(d_model, d_model),
            layers.MultiHeadFFN(d_model, heads=2, head_dim=64, intermediate=40, fused=fused),
            torch.nn.Linear(d_model, 4),
        )

    x = torch.randn(T, d_model)
    target = torch.randint(0, 4, (T,))
    losses = {}
    for fused in (True, False):
        net = model(fused)
        opt = torch.optim.SGD(net.parameters(), lr=0.5)
        out = []
        for _ in range(4):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x), target)
            loss.backward()
            opt.step()
            out.append(loss.item())
        losses[fused] = out
    assert losses[True][-1] < losses[True][0]  # it learns
    for a, b in zip(losses[True], losses[False]):
        assert abs(a - b) <= 1e-4 * max(1.0, abs(b))
