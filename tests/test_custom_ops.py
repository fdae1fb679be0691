"""tilewise's torch custom ops on the CPU under the Triton interpreter.

opcheck (schema, autograd registration, fake tensors, AOT dispatch with dynamic shapes) for every
op on small fp32/fp16 inputs; fake-tensor shape inference; torch.compile(fullgraph=True) of a model
that uses every op (backend "aot_eager": the graph is traced by dynamo and AOTAutograd exactly as
for Inductor, then run eagerly, because Inductor's code for the interpreter's CPU tensors would
wrap Triton kernels that need a GPU); no recompilation per call; bad input refused at trace time
with the eager InputError's message; the autograd formulas against float64 torch.
"""

from __future__ import annotations

import pytest
from helpers import kernel_device

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = pytest.mark.kernel

import tilewise.kernels as K  # noqa: E402
from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels import custom_ops, mhmoe, moe_layer  # noqa: E402

DEV = kernel_device()
OPS = torch.ops.tilewise


def rand(*shape, dtype=torch.float32, grad=False, scale=1.0, seed=None, gen=None):
    t = torch.randn(*shape, generator=gen, dtype=torch.float32) * scale
    return t.to(device=DEV, dtype=dtype).requires_grad_(grad)


@pytest.fixture
def gen(request):
    return torch.Generator().manual_seed(abs(hash(request.node.name)) % 2**31)


def close(actual, expected, atol, rtol, what):
    """Every element: |a - e| <= atol + rtol |e|; the message says how many and where."""
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    assert a.shape == e.shape, f"{what}: shape {list(a.shape)} != {list(e.shape)}"
    bad = ~((a - e).abs() <= atol + rtol * e.abs())
    n = int(bad.sum())
    if n:
        idx = torch.nonzero(bad)[:5].tolist()
        err = (a - e).abs().max().item()
        raise AssertionError(f"{what}: {n} of {a.numel()} elements off (first at {idx}), max abs err {err:.3g}")


def offsets_of(counts):
    return torch.tensor(counts, dtype=torch.int32).cumsum(0).to(torch.int32).to(DEV)


def moe_inputs(gen, R=6, k=2, E=3, d=16, f=8, dtype=torch.float32, grad=True):
    logits = torch.randn(R, E, generator=gen)
    w, e = moe_layer.route(logits, k)
    p = mhmoe.plan(w, e, E)
    return (
        rand(R, d, dtype=dtype, grad=grad, gen=gen),
        w.to(DEV).requires_grad_(grad),
        p.slot_of.to(DEV),
        p.offsets.to(DEV),
        rand(E, d, 2 * f, dtype=dtype, grad=grad, scale=0.3, gen=gen),
        rand(E, f, d, dtype=dtype, grad=grad, scale=0.3, gen=gen),
    )


# ------------------------------------------------------------------------------ opcheck


def _attention_backward_args(gen):
    q, k, v = rand(1, 4, 9, 16, gen=gen), rand(1, 2, 6, 16, gen=gen), rand(1, 2, 6, 16, gen=gen)
    out, lse = custom_ops.flash_attention.attention(q, k, v, causal=True)
    return (rand(1, 4, 9, 16, gen=gen), rand(1, 4, 9, gen=gen), q, k, v, out, lse, True, None, True)


def _cases(gen):
    dt16 = torch.float16
    return {
        "matmul-silu-fp32": (OPS.matmul, (rand(7, 5, grad=True, gen=gen), rand(5, 9, grad=True, gen=gen),
                                          rand(9, grad=True, gen=gen), "silu")),
        "matmul-gelu-fp16": (OPS.matmul, (rand(7, 5, dtype=dt16, grad=True, gen=gen),
                                          rand(5, 9, dtype=dt16, grad=True, gen=gen), None, "gelu")),
        "sum-dim": (OPS.sum, (rand(5, 7, grad=True, gen=gen), 1, False)),
        "sum-all-fp16": (OPS.sum, (rand(5, 7, dtype=dt16, grad=True, gen=gen), None, False)),
        "sum-keepdim": (OPS.sum, (rand(3, 5, 7, grad=True, gen=gen), -1, True)),
        "attention-causal-gqa": (OPS.attention, (rand(1, 2, 5, 16, grad=True, gen=gen),
                                                 rand(1, 1, 7, 16, grad=True, gen=gen),
                                                 rand(1, 1, 7, 16, grad=True, gen=gen), True, None)),
        "attention-fp16": (OPS.attention, (rand(1, 2, 3, 16, dtype=dt16, grad=True, gen=gen),
                                           rand(1, 2, 3, 16, dtype=dt16, grad=True, gen=gen),
                                           rand(1, 2, 3, 16, dtype=dt16, grad=True, gen=gen), False, 0.3)),
        "attention-backward-gqa-dlse": (OPS.attention_backward, _attention_backward_args(gen)),
        "decode": (OPS.decode_attention, (rand(2, 4, 16, gen=gen), rand(2, 2, 37, 16, gen=gen),
                                          rand(2, 2, 37, 16, gen=gen), torch.tensor([37, 20], dtype=torch.int32),
                                          None, None, None, None, None, None, None)),
        "grouped-empty-expert": (OPS.grouped_matmul, (rand(13, 16, grad=True, gen=gen),
                                                      rand(3, 16, 24, grad=True, gen=gen),
                                                      offsets_of([4, 0, 9]), True)),
        "grouped-fp16": (OPS.grouped_matmul, (rand(9, 16, dtype=dt16, grad=True, gen=gen),
                                              rand(2, 16, 8, dtype=dt16, grad=True, gen=gen),
                                              offsets_of([5, 4]), False)),
        "grouped-dw": (OPS.grouped_matmul_dw, (rand(13, 16, gen=gen), rand(13, 24, gen=gen),
                                               offsets_of([4, 0, 9]), None, None, 1, None)),
        "moe-experts": (OPS.moe_experts, (*moe_inputs(gen), True)),
        "moe-experts-fp16-inference": (OPS.moe_experts, (*moe_inputs(gen, dtype=dt16, grad=False), False)),
        "moe": (OPS.moe, (rand(7, 16, grad=True, gen=gen), rand(7, 4, grad=True, gen=gen),
                          rand(4, 16, 16, grad=True, scale=0.3, gen=gen),
                          rand(4, 8, 16, grad=True, scale=0.3, gen=gen), 2)),
        "flash-ffn": (OPS.flash_ffn, (rand(5, 2, 64, grad=True, gen=gen), rand(2, 64, 24, grad=True, scale=0.1, gen=gen),
                                      rand(2, 64, 24, grad=True, scale=0.1, gen=gen),
                                      rand(2, 24, 64, grad=True, scale=0.1, gen=gen))),
    }  # fmt: skip


CASES = sorted(_cases(torch.Generator().manual_seed(0)))


@pytest.mark.parametrize("case", CASES)
def test_opcheck(case, gen):
    op, args = _cases(gen)[case]
    torch.library.opcheck(op, args)


def test_every_public_op_is_registered():
    for name in custom_ops.OPS:
        assert hasattr(torch.ops.tilewise, name), name
    for name in ("matmul", "sum", "attention", "decode_attention", "grouped_matmul", "moe", "flash_ffn"):
        assert getattr(K, name) is getattr(custom_ops, name)


# ----------------------------------------------------------------------- fake tensors


def test_fake_tensor_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a, b = torch.empty(1000, 77, device=DEV), torch.empty(77, 3, device=DEV)
        assert OPS.matmul(a, b, None, "none").shape == (1000, 3)
        x = torch.empty(4, 5, 6, device=DEV, dtype=torch.float16)
        assert OPS.sum(x, 1, False).shape == (4, 6) and OPS.sum(x, -1, True).shape == (4, 5, 1)
        assert OPS.sum(x, None, False).shape == () and OPS.sum(x, None, False).dtype == torch.float16
        q, kv = torch.empty(2, 8, 127, 64, device=DEV), torch.empty(2, 2, 1000, 64, device=DEV)
        out, lse = OPS.attention(q, kv, kv, True, None)
        assert out.shape == q.shape and lse.shape == (2, 8, 127) and lse.dtype == torch.float32
        q1 = torch.empty(3, 8, 1, 128, device=DEV)
        cache = torch.empty(3, 2, 4096, 128, device=DEV)
        lens = torch.empty(3, dtype=torch.int32, device=DEV)
        out, lse = OPS.decode_attention(q1, cache, cache, lens, None, None, None, 4096, None, None, None)
        assert out.shape == q1.shape and lse.shape == (3, 8)
        xs, w = torch.empty(1000, 64, device=DEV), torch.empty(7, 64, 96, device=DEV)
        off = torch.empty(7, dtype=torch.int32, device=DEV)
        assert OPS.grouped_matmul(xs, w, off, False).shape == (1000, 96)
        assert OPS.grouped_matmul_dw(xs, torch.empty(1000, 96, device=DEV), off, None, None, 1, None).shape == (
            7,
            64,
            96,
        )
        z = torch.empty(10, 4, 64, device=DEV)
        wg, wd = torch.empty(4, 64, 100, device=DEV), torch.empty(4, 100, 64, device=DEV)
        assert OPS.flash_ffn(z, wg, wg, wd).shape == (10, 4, 64)


# ----------------------------------------------------------------------- autograd vs float64


def test_matmul_grad_matches_float64(gen):
    for act in ("none", "relu", "gelu", "silu"):
        a, b, bias = rand(13, 7, grad=True, gen=gen), rand(7, 5, grad=True, gen=gen), rand(5, grad=True, gen=gen)
        y = K.matmul(a, b, bias=bias, activation=act)
        gy = rand(13, 5, gen=gen)
        ga, gb, gbias = torch.autograd.grad(y, (a, b, bias), gy)
        a64, b64, bias64 = (t.detach().double().requires_grad_() for t in (a, b, bias))
        pre = a64 @ b64 + bias64
        ref = {"none": pre, "relu": torch.relu(pre), "silu": torch.nn.functional.silu(pre),
               "gelu": torch.nn.functional.gelu(pre, approximate="tanh")}[act]  # fmt: skip
        ra, rb, rbias = torch.autograd.grad(ref, (a64, b64, bias64), gy.double())
        for got, want, what in ((ga, ra, "dA"), (gb, rb, "dB"), (gbias, rbias, "dbias")):
            close(got, want, 1e-4, 1e-4, f"{act} {what}")


def test_sum_grad(gen):
    x = rand(3, 4, 5, grad=True, gen=gen)
    for dim, keep in ((None, False), (1, False), (-1, True), (0, False)):
        y = K.sum(x, dim, keepdim=keep)
        g = torch.randn(y.shape, generator=gen)
        (gx,) = torch.autograd.grad(y, x, g)
        x64 = x.detach().double().requires_grad_()
        ref = x64.sum() if dim is None else x64.sum(dim, keepdim=keep)
        (rx,) = torch.autograd.grad(ref, x64, g.double())
        close(gx, rx, 0, 0, f"dx dim={dim}")


@pytest.mark.parametrize("causal,Sq,Sk,H,Hk", [(False, 5, 7, 2, 1), (True, 7, 7, 2, 2), (True, 3, 9, 4, 2)])
def test_attention_grad_matches_float64(causal, Sq, Sk, H, Hk, gen):
    q, k, v = (rand(1, h, s, 16, grad=True, gen=gen) for h, s in ((H, Sq), (Hk, Sk), (Hk, Sk)))
    out, lse = K.attention(q, k, v, causal=causal)
    go, gl = rand(*out.shape, gen=gen), rand(*lse.shape, gen=gen)
    grads = torch.autograd.grad((out, lse), (q, k, v), (go, gl))
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    kk, vv = k64.repeat_interleave(H // Hk, 1), v64.repeat_interleave(H // Hk, 1)
    s = q64 @ kk.transpose(-1, -2) / 16**0.5
    if causal:
        s = s.masked_fill(~torch.ones(Sq, Sk, dtype=torch.bool).tril(Sk - Sq), float("-inf"))
    ref_out = torch.softmax(s, -1) @ vv
    ref_lse = torch.logsumexp(s, -1)
    ref = torch.autograd.grad((ref_out, ref_lse), (q64, k64, v64), (go.double(), gl.double()))
    for got, want, what in zip(grads, ref, ("dq", "dk", "dv")):
        close(got, want, 1e-4, 1e-4, what)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.float16, 2e-2)])
def test_grouped_matmul_grad_matches_float64(dtype, tol, gen):
    counts = [5, 0, 1, 17]
    x, w = rand(23, 16, dtype=dtype, grad=True, gen=gen), rand(4, 16, 24, dtype=dtype, grad=True, gen=gen)
    off = offsets_of(counts)
    y = K.grouped_matmul(x, w, off)
    gy = rand(23, 24, dtype=dtype, gen=gen)
    gx, gw = torch.autograd.grad(y, (x, w), gy)
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    e = torch.repeat_interleave(torch.arange(4), torch.tensor(counts))
    ref = torch.einsum("tk,tkn->tn", x64, w64[e])
    rx, rw = torch.autograd.grad(ref, (x64, w64), gy.double())
    close(gx, rx, tol, tol, "dx")
    close(gw, rw, tol * 4, tol, "dw")  # 17-row reductions in the weight gradient
    assert (gw[1] == 0).all()  # the expert that got no rows


# ----------------------------------------------------------------------- torch.compile


class EveryOp(torch.nn.Module):
    """A toy model that calls every tilewise op (and both nn.Modules) in one graph."""

    def __init__(self, dtype=torch.float32):
        super().__init__()
        g = torch.Generator().manual_seed(7)
        self.w = torch.nn.Parameter(torch.randn(64, 64, generator=g) / 8)
        self.bias = torch.nn.Parameter(torch.zeros(64))
        self.ffn = K.MultiHeadFFN(64, 1, 64, 24, device=DEV)
        self.mhmoe = K.MultiHeadMoE(64, 2, 32, 3, 16, 2, device=DEV)
        self.wgu = torch.nn.Parameter(torch.randn(3, 64, 32, generator=g) / 8)
        self.wd = torch.nn.Parameter(torch.randn(3, 16, 64, generator=g) / 4)
        self.router = torch.nn.Parameter(torch.randn(64, 3, generator=g) / 8)
        self.to(DEV, dtype)

    def forward(self, x, cache, lens, offsets):
        T = x.shape[0]
        h = K.matmul(x, self.w, bias=self.bias, activation="silu")  # [T, 64]
        h = self.ffn(h) + self.mhmoe(h)
        h = h + K.moe(h, h @ self.router, self.wgu, self.wd, 2)
        q = h.view(1, T, 4, 16).transpose(1, 2)  # [1, 4, T, 16]
        o, _ = K.attention(q, q, q, causal=True)
        h = o.transpose(1, 2).reshape(T, 64)
        # decode is an inference op (no autograd formula): its query is detached
        d, _ = K.decode_attention(h[:2].detach().view(2, 4, 16), cache, cache, lens, max_seq_len=cache.shape[2])
        g = K.grouped_matmul(h, self.wgu, offsets, check_offsets=False)
        return K.sum(g, dim=1) + K.sum(d), h


def model_inputs(seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(9, 64, generator=g).to(DEV, dtype)
    cache = torch.randn(2, 2, 33, 16, generator=g).to(DEV, dtype)
    lens = torch.tensor([33, 5], dtype=torch.int32, device=DEV)
    return x, cache, lens, offsets_of([4, 0, 5])


def test_compiled_model_with_every_op_fullgraph_no_recompile():
    import torch._dynamo

    torch._dynamo.reset()
    model = EveryOp()
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    frames = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    for seed in (1, 2, 3):
        args = model_inputs(seed)
        got, h = compiled(*args)
        want, h_ref = model(*args)
        close(got, want, 1e-3, 1e-3, "compiled output")
        got.sum().backward()  # the compiled backward: every op's formula traced by AOTAutograd
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] - frames == 1  # one graph, no recompile
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_compiled_training_step_matches_eager_grads():
    import torch._dynamo

    torch._dynamo.reset()
    ref, model = EveryOp(), EveryOp()
    ref.load_state_dict(model.state_dict())
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    args = model_inputs(4)
    compiled(*args)[0].sum().backward()
    ref(*args)[0].sum().backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        close(p.grad, q.grad, 1e-4, 1e-3, f"d{name}")


def _input_error(exc: BaseException) -> InputError | None:
    while exc is not None:
        if isinstance(exc, InputError):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


@pytest.mark.parametrize(
    "call",
    [
        lambda: K.matmul(torch.randn(3, 4, device=DEV), torch.randn(5, 6, device=DEV)),
        lambda: K.sum(torch.randn(3, 4, device=DEV), dim=5),
        lambda: K.attention(*(torch.randn(1, 2, 4, 24, device=DEV),) * 3),
        lambda: K.grouped_matmul(
            torch.randn(4, 8, device=DEV), torch.randn(2, 9, 8, device=DEV), offsets_of([2, 2]), check_offsets=False
        ),
        lambda: K.flash_ffn(
            torch.randn(3, 2, 48, device=DEV), *(torch.randn(2, 48, 8, device=DEV),) * 2, torch.randn(2, 8, 48)
        ),
        lambda: K.moe(
            torch.randn(3, 8, device=DEV), torch.randn(3, 2, device=DEV), torch.randn(2, 8, 6), torch.randn(2, 3, 8), 3
        ),  # fmt: skip
    ],
    ids=["matmul", "sum", "attention", "grouped", "flash_ffn", "moe"],
)
def test_bad_input_under_compile_fails_at_trace_time_with_the_eager_message(call):
    """Eager: InputError. Compiled: the fake impl runs the same check while dynamo traces, before any
    kernel runs. Dynamo wraps every exception raised while it runs an op on fake tensors in its own
    TorchRuntimeError (torch/_dynamo/utils.py, get_fake_value; only IndexError passes through), with
    or without fullgraph, so the InputError arrives as that error's cause, with the same message."""
    import torch._dynamo

    with pytest.raises(InputError) as eager:
        call()
    for fullgraph in (True, False):
        torch._dynamo.reset()
        with pytest.raises(Exception) as traced:
            torch.compile(call, fullgraph=fullgraph, backend="aot_eager")()
        assert str(eager.value) in str(traced.value)
        found = _input_error(traced.value)
        assert found is not None and str(found) == str(eager.value)


def test_sweep_knobs_are_refused_under_autograd():
    a = torch.randn(4, 4, device=DEV, requires_grad=True)
    from tilewise.kernels.gemm import choose_config

    with pytest.raises(InputError, match="config= pins the kernel"):
        K.matmul(a, a, config=choose_config(4, 4, 4, "fp32"))
