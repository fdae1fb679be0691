"""tilewise's ops as torch custom ops: torch.compile, CUDA graphs and autograd see them like torch's own.

Every public op is registered under `torch.ops.tilewise.*` with

* a fake (meta) implementation that runs the op's own input checks and gives the output shapes,
  so `torch.compile(fullgraph=True)` traces a model through it without a graph break, and a bad
  input is refused at trace time with the op's InputError message;
* an autograd formula where the op is differentiable (`register_autograd`; the backward calls
  tilewise ops again, so the backward graph compiles too);
* no host synchronisation inside, when the caller passes what the op needs (a device `seq_lens`
  with `max_seq_len` for decode, `check_offsets=False` for the grouped GEMM), so CUDA graphs
  capture it.

The public functions below (exported as `tilewise.kernels.matmul`, ...) are thin wrappers. torch's
Python dispatch of a custom op costs several µs per call, and the eager host cost of every op is
budgeted to within 10 µs of its torch peer (`tilewise bench overhead`), so an eager call without autograd goes
straight to the kernel module; the wrapper takes the `torch.ops.tilewise` route only when
torch.compile is tracing or an input needs a gradient.

| op                         | autograd                                                           |
|----------------------------|--------------------------------------------------------------------|
| matmul                     | dA = G B^T, dB = A^T G, dbias = sum G on tilewise.matmul (G: act') |
| sum                        | the gradient broadcast back                                        |
| attention                  | attention_backward: flash backward kernels, memory linear in S     |
| decode_attention           | none (inference)                                                   |
| grouped_matmul             | dx on grouped_matmul with w^T, dw on grouped_matmul_dw             |
| moe                        | composite: torch routing + moe_experts (routing grads from torch)  |
| moe_experts (MH-MoE, moe)  | mhmoe.experts_backward: grouped GEMMs + grouped dW kernel          |
| flash_ffn                  | FlashFFN's fused backward kernels                                  |

Sweep knobs (`config=`, `programs=`, `trace=`) pin tiles for eager benchmarking only: they are
refused under torch.compile and with autograd, where they would be ignored silently.
"""

from types import SimpleNamespace
from typing import Any

import torch
from torch import Tensor

from tilewise.errors import InputError
from tilewise.kernels import (
    attention_backward,
    decode,
    ffn,
    flash_attention,
    gemm,
    grouped_dw,
    grouped_gemm,
    mhmoe,
    moe_layer,
    reduce,
)

# --------------------------------------------------------------------------- helpers


def _traced() -> bool:
    """True while torch.compile (dynamo) or torch.export traces the caller."""
    return bool(torch.compiler.is_compiling())


def _needs_grad(a: Any, b: Any = None, c: Any = None, d: Any = None) -> bool:
    """Any of the (up to four) inputs needs a gradient. Fixed arguments and attribute reads only: this
    runs on every eager call, where a loop over *args with isinstance cost ~1 µs against ~0.25 µs."""
    if not _grad_enabled():
        return False
    try:
        return (
            a.requires_grad
            or (b is not None and b.requires_grad)
            or (c is not None and c.requires_grad)
            or (d is not None and d.requires_grad)
        )
    except AttributeError:  # not a tensor: the op's own checks refuse it with an InputError
        return False


_grad_enabled = torch.is_grad_enabled


def _eager_only(op: str, **knobs: Any) -> None:
    for name, value in knobs.items():
        if value is not None and value is not False:
            raise InputError(
                f"{op}: {name}= pins the kernel for eager benchmarking; leave it unset under torch.compile "
                f"or with autograd, got {name}={value!r}"
            )


def _act_grad(pre: Tensor, activation: str) -> Tensor:
    """d activation / d pre, fp32 (the kernel applies the activation in fp32: gemm._epilogue)."""
    if activation == "relu":
        return (pre > 0).float()
    if activation == "silu":
        s = torch.sigmoid(pre)
        return s * (1 + pre * (1 - s))
    # gelu, tanh approximation: 0.5 x (1 + tanh(c (x + 0.044715 x^3)))
    c = 0.7978845608028654
    t = torch.tanh(c * (pre + 0.044715 * pre**3))
    return 0.5 * (1 + t) + 0.5 * pre * (1 - t * t) * c * (1 + 3 * 0.044715 * pre * pre)


# --------------------------------------------------------------------------- matmul


@torch.library.custom_op(  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
    "tilewise::matmul", mutates_args=(), schema="(Tensor a, Tensor b, Tensor? bias, str activation) -> Tensor"
)
def _matmul_op(a: Tensor, b: Tensor, bias: Tensor | None, activation: str) -> Tensor:
    return gemm.matmul(a, b, bias=bias, activation=activation)


@_matmul_op.register_fake  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _(a: Any, b: Any, bias: Any, activation: Any) -> Any:
    gemm.check_matmul(a, b, None, bias, activation)
    return a.new_empty((a.shape[0], b.shape[1]))


def _matmul_setup(ctx: Any, inputs: Any, output: Any) -> None:
    a, b, bias, activation = inputs
    ctx.save_for_backward(a, b, bias)
    ctx.activation = activation


def _matmul_backward(ctx: Any, grad: Any) -> Any:
    a, b, bias = ctx.saved_tensors
    g = grad
    if ctx.activation != "none":
        # the pre-activation is recomputed (one more GEMM) rather than kept: an inference-sized saving
        pre = torch.ops.tilewise.matmul(a, b, bias, "none").float()
        g = grad.float() * _act_grad(pre, ctx.activation)
    g = g.to(a.dtype)
    need_a, need_b, need_bias = ctx.needs_input_grad[:3]
    da = torch.ops.tilewise.matmul(g, b.t(), None, "none") if need_a else None
    db = torch.ops.tilewise.matmul(a.t(), g, None, "none") if need_b else None
    dbias = g.float().sum(0).to(bias.dtype) if need_bias else None
    return da, db, dbias, None


_matmul_op.register_autograd(_matmul_backward, setup_context=_matmul_setup)


def matmul(
    a: Tensor,
    b: Tensor,
    *,
    out: Tensor | None = None,
    bias: Tensor | None = None,
    activation: str = "none",
    config: Any = None,
) -> Tensor:
    """C = activation(A @ B + bias): `tilewise.kernels.gemm.matmul`, registered as torch.ops.tilewise.matmul."""
    if not (_traced() or _needs_grad(a, b, bias)):
        return gemm.matmul(a, b, out=out, bias=bias, activation=activation, config=config)
    _eager_only("matmul", config=config)
    if out is not None:
        gemm.check_matmul(a, b, out, bias, activation)
        return out.copy_(torch.ops.tilewise.matmul(a, b, bias, activation))
    return torch.ops.tilewise.matmul(a, b, bias, activation)


# --------------------------------------------------------------------------- sum


@torch.library.custom_op("tilewise::sum", mutates_args=(), schema="(Tensor x, int? dim, bool keepdim) -> Tensor")  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _sum_op(x: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    return reduce.sum(x, dim, keepdim=keepdim)


def _sum_shape(x: Tensor, dim: int | None, keepdim: bool) -> list[int]:
    if dim is None or x.dim() == 0:
        return []
    d = dim % x.dim()
    shape = list(x.shape)
    if keepdim:
        shape[d] = 1
    else:
        del shape[d]
    return shape


@_sum_op.register_fake  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _(x: Any, dim: Any, keepdim: Any) -> Any:
    reduce.check_sum(x, dim)
    return x.new_empty(_sum_shape(x, dim, keepdim))


def _sum_setup(ctx: Any, inputs: Any, output: Any) -> None:
    x, dim, keepdim = inputs
    ctx.shape, ctx.dim, ctx.keepdim = x.shape, dim, keepdim


def _sum_backward(ctx: Any, grad: Any) -> Any:
    if ctx.dim is not None and len(ctx.shape) > 0 and not ctx.keepdim:
        grad = grad.unsqueeze(ctx.dim % len(ctx.shape))
    return grad.expand(ctx.shape), None, None


_sum_op.register_autograd(_sum_backward, setup_context=_sum_setup)


def sum(x: Tensor, dim: int | None = None, *, keepdim: bool = False, config: Any = None) -> Tensor:
    """Sum over all elements or one dimension: `tilewise.kernels.reduce.sum`, as torch.ops.tilewise.sum."""
    if not (_traced() or _needs_grad(x)):
        return reduce.sum(x, dim, keepdim=keepdim, config=config)
    _eager_only("sum", config=config)
    return torch.ops.tilewise.sum(x, dim, keepdim)


# --------------------------------------------------------------------------- attention


@torch.library.custom_op(  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
    "tilewise::attention",
    mutates_args=(),
    schema="(Tensor q, Tensor k, Tensor v, bool causal, float? scale) -> (Tensor, Tensor)",
)
def _attention_op(q: Tensor, k: Tensor, v: Tensor, causal: bool, scale: float | None) -> tuple[Tensor, Tensor]:
    return flash_attention.attention(q, k, v, causal=causal, scale=scale)


@_attention_op.register_fake  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _(q: Any, k: Any, v: Any, causal: Any, scale: Any) -> Any:
    flash_attention.check_attention(q, k, v, scale)
    B, H, Sq, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((B, H, Sq), dtype=torch.float32)


def _attention_setup(ctx: Any, inputs: Any, output: Any) -> None:
    q, k, v, causal, scale = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.causal, ctx.scale = causal, scale


def _attention_backward(ctx: Any, d_out: Any, d_lse: Any) -> Any:
    """FlashAttention's backward kernels (`tilewise.kernels.attention_backward`): P is rebuilt tile by tile from
    the saved lse, so memory stays linear in the sequence. dQ comes from a second kernel without atomics (the
    default mode; torch.use_deterministic_algorithms(True) keeps it whatever the mode)."""
    q, k, v, out, lse = ctx.saved_tensors
    if d_out is None:  # only the lse was used
        d_out = torch.zeros_like(out)
    dq, dk, dv = torch.ops.tilewise.attention_backward(
        d_out, d_lse, q, k, v, out, lse, ctx.causal, ctx.scale, torch.are_deterministic_algorithms_enabled()
    )
    return dq, dk, dv, None, None


@torch.library.custom_op(  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
    "tilewise::attention_backward",
    mutates_args=(),
    schema="(Tensor d_out, Tensor? d_lse, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, bool causal, "
    "float? scale, bool deterministic) -> (Tensor, Tensor, Tensor)",
)
def _attention_backward_op(
    d_out: Any, d_lse: Any, q: Any, k: Any, v: Any, out: Any, lse: Any, causal: Any, scale: Any, deterministic: Any
) -> Any:
    return attention_backward.attention_backward(
        d_out, q, k, v, out, lse, d_lse=d_lse, causal=causal, scale=scale, deterministic=deterministic
    )


@_attention_backward_op.register_fake  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _(
    d_out: Any, d_lse: Any, q: Any, k: Any, v: Any, out: Any, lse: Any, causal: Any, scale: Any, deterministic: Any
) -> Any:
    attention_backward.check_attention_backward(d_out, d_lse, q, k, v, out, lse, scale)
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


_attention_op.register_autograd(_attention_backward, setup_context=_attention_setup)


def attention(
    q: Tensor, k: Tensor, v: Tensor, *, causal: bool = False, scale: float | None = None, config: Any = None
) -> Any:
    """FlashAttention forward: `tilewise.kernels.flash_attention.attention`, as torch.ops.tilewise.attention."""
    if not (_traced() or _needs_grad(q, k, v)):
        return flash_attention.attention(q, k, v, causal=causal, scale=scale, config=config)
    _eager_only("attention", config=config)
    return torch.ops.tilewise.attention(q, k, v, bool(causal), scale)


# --------------------------------------------------------------------------- decode attention


@torch.library.custom_op(  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
    "tilewise::decode_attention",
    mutates_args=(),
    schema="(Tensor q, Tensor k_cache, Tensor v_cache, Tensor seq_lens, float? scale, Tensor? block_table, "
    "int? num_splits, int? max_seq_len, int[]? tile, int? max_chunk, bool? use_desc) -> (Tensor, Tensor)",
)
def _decode_op(
    q: Any,
    k_cache: Any,
    v_cache: Any,
    seq_lens: Any,
    scale: Any,
    block_table: Any,
    num_splits: Any,
    max_seq_len: Any,
    tile: Any,
    max_chunk: Any,
    use_desc: Any,
) -> Any:
    return decode.decode_attention(
        q, k_cache, v_cache, seq_lens, scale=scale, block_table=block_table, num_splits=num_splits,
        max_seq_len=max_seq_len, tile=tuple(tile) if tile is not None else None, max_chunk=max_chunk,
        use_desc=use_desc,
    )  # fmt: skip


@_decode_op.register_fake  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _(
    q: Any,
    k_cache: Any,
    v_cache: Any,
    seq_lens: Any,
    scale: Any,
    block_table: Any,
    num_splits: Any,
    max_seq_len: Any,
    tile: Any,
    max_chunk: Any,
    use_desc: Any,
) -> Any:
    decode.check_decode_attention(q, k_cache, v_cache, block_table, scale)
    B = q.shape[0]
    # the lengths' values are data (checked when the op runs); their shape and dtype are checked here
    if seq_lens.dim() != 1 or seq_lens.shape[0] != B:
        raise InputError(f"seq_lens must have shape [{B}] (one length per sequence), got {list(seq_lens.shape)}")
    if seq_lens.is_floating_point() or seq_lens.is_complex() or seq_lens.dtype == torch.bool:
        raise InputError(f"seq_lens must hold integers, got {seq_lens.dtype}")
    return q.new_empty(q.shape), q.new_empty((B, q.shape[1]), dtype=torch.float32)


def decode_attention(
    q: Tensor,
    k_cache: Tensor,
    v_cache: Tensor,
    seq_lens: Any,
    *,
    scale: float | None = None,
    block_table: Tensor | None = None,
    num_splits: int | None = None,
    max_seq_len: int | None = None,
    tile: Any = None,
    max_chunk: int | None = None,
    use_desc: bool | None = None,
) -> Any:
    """Split-KV decode attention: `tilewise.kernels.decode.decode_attention`, as torch.ops.tilewise.decode_attention.

    Under torch.compile and in CUDA graphs pass `seq_lens` as a tensor on the cache's device and
    `max_seq_len` (a bound on the lengths, or the cache length is used): then nothing waits for the
    GPU. A list of ints is turned into a device tensor in the graph (and bounds `max_seq_len`).
    """
    if not _traced():
        return decode.decode_attention(
            q, k_cache, v_cache, seq_lens, scale=scale, block_table=block_table, num_splits=num_splits,
            max_seq_len=max_seq_len, tile=tile, max_chunk=max_chunk, use_desc=use_desc,
        )  # fmt: skip
    if not isinstance(seq_lens, torch.Tensor):
        lens = [int(x) for x in seq_lens]
        max_seq_len = max_seq_len if max_seq_len is not None else (max(lens) if lens else 0)
        seq_lens = torch.tensor(lens, dtype=torch.int32, device=q.device)
    return torch.ops.tilewise.decode_attention(
        q, k_cache, v_cache, seq_lens, scale, block_table, num_splits, max_seq_len,
        list(tile) if tile is not None else None, max_chunk, use_desc,
    )  # fmt: skip


# --------------------------------------------------------------------------- grouped GEMM


@torch.library.custom_op(  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
    "tilewise::grouped_matmul_dw",
    mutates_args=(),
    schema="(Tensor x, Tensor dy, Tensor offsets, Tensor? x_gather, Tensor? dy_gather, int gather_div, "
    "Tensor? dy_scale) -> Tensor",
)
def _grouped_dw_op(x: Any, dy: Any, offsets: Any, x_gather: Any, dy_gather: Any, gather_div: Any, dy_scale: Any) -> Any:
    return grouped_dw.grouped_matmul_dw(
        x, dy, offsets, x_gather=x_gather, dy_gather=dy_gather, gather_div=gather_div, dy_scale=dy_scale
    )


@_grouped_dw_op.register_fake  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _(x: Any, dy: Any, offsets: Any, x_gather: Any, dy_gather: Any, gather_div: Any, dy_scale: Any) -> Any:
    grouped_dw.check_grouped_matmul_dw(x, dy, offsets, x_gather, dy_gather, dy_scale, gather_div)
    return x.new_empty((offsets.shape[0], x.shape[1], dy.shape[1]))


def grouped_matmul_dw(
    x: Tensor,
    dy: Tensor,
    offsets: Tensor,
    *,
    x_gather: Tensor | None = None,
    dy_gather: Tensor | None = None,
    gather_div: int = 1,
    dy_scale: Tensor | None = None,
) -> Tensor:
    """dw[e] = X_e^T DY_e: `tilewise.kernels.grouped_dw.grouped_matmul_dw`, as torch.ops.tilewise.grouped_matmul_dw."""
    if not _traced():
        return grouped_dw.grouped_matmul_dw(
            x, dy, offsets, x_gather=x_gather, dy_gather=dy_gather, gather_div=gather_div, dy_scale=dy_scale
        )
    return torch.ops.tilewise.grouped_matmul_dw(x, dy, offsets, x_gather, dy_gather, gather_div, dy_scale)


@torch.library.custom_op(  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
    "tilewise::grouped_matmul",
    mutates_args=(),
    schema="(Tensor x, Tensor w, Tensor offsets, bool check_offsets) -> Tensor",
)
def _grouped_op(x: Tensor, w: Tensor, offsets: Tensor, check_offsets: bool) -> Tensor:
    return grouped_gemm.grouped_matmul(x, w, offsets, check_offsets=check_offsets)


@_grouped_op.register_fake  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _(x: Any, w: Any, offsets: Any, check_offsets: Any) -> Any:
    grouped_gemm.check_grouped_matmul(x, w, offsets)
    return x.new_empty((x.shape[0], w.shape[2]))


def _grouped_setup(ctx: Any, inputs: Any, output: Any) -> None:
    x, w, offsets, _ = inputs
    ctx.save_for_backward(x, w, offsets)


def _grouped_backward(ctx: Any, dy: Any) -> Any:
    x, w, offsets = ctx.saved_tensors
    dy = dy.contiguous()
    dx = dw = None
    if ctx.needs_input_grad[0]:
        # dx = dy w_e^T per expert: the same grouped GEMM on the transposed (strided) weights; rows past
        # offsets[-1] are not written by the forward, so their gradient is zero
        dx = torch.ops.tilewise.grouped_matmul(dy, w.transpose(1, 2), offsets, False)
        rows = torch.arange(x.shape[0], device=x.device)
        dx = torch.where((rows < offsets[-1])[:, None], dx, 0)
    if ctx.needs_input_grad[1]:
        dw = torch.ops.tilewise.grouped_matmul_dw(x, dy, offsets, None, None, 1, None)
    return dx, dw, None, None


_grouped_op.register_autograd(_grouped_backward, setup_context=_grouped_setup)


def grouped_matmul(
    x: Tensor,
    w: Tensor,
    offsets: Tensor,
    *,
    out: Tensor | None = None,
    config: Any = None,
    check_offsets: bool = True,
    programs: int | None = None,
    trace: bool = False,
) -> Any:
    """y = x @ w[e] per expert: `tilewise.kernels.grouped_gemm.grouped_matmul`, as torch.ops.tilewise.grouped_matmul.

    Pass check_offsets=False inside CUDA graphs (the check copies the offsets to the host)."""
    if not (_traced() or _needs_grad(x, w)):
        return grouped_gemm.grouped_matmul(
            x, w, offsets, out=out, config=config, check_offsets=check_offsets, programs=programs, trace=trace
        )
    _eager_only("grouped_matmul", config=config, programs=programs, trace=trace)
    y = torch.ops.tilewise.grouped_matmul(x, w, offsets, bool(check_offsets))
    if out is not None:
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(y.shape) or out.dtype != y.dtype:
            raise InputError(f"out must be a {x.dtype} tensor of shape {list(y.shape)}, got {out!r:.60}")
        return out.copy_(y)
    return y


# --------------------------------------------------------------------------- MoE expert FFN


@torch.library.custom_op(  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
    "tilewise::moe_experts",
    mutates_args=(),
    schema="(Tensor z, Tensor slot_weights, Tensor slot_of, Tensor offsets, Tensor w_gate_up, Tensor w_down, "
    "bool keep_activation) -> (Tensor, Tensor)",
)
def _experts_op(
    z: Any, slot_weights: Any, slot_of: Any, offsets: Any, w_gate_up: Any, w_down: Any, keep_activation: Any
) -> Any:
    if keep_activation:
        return mhmoe.experts_forward_train(z, slot_weights, slot_of, offsets, w_gate_up, w_down)
    out = mhmoe.experts_forward(z, slot_weights, slot_of, offsets, w_gate_up, w_down)
    return out, z.new_empty((0, w_gate_up.shape[2]))


@_experts_op.register_fake  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _(z: Any, slot_weights: Any, slot_of: Any, offsets: Any, w_gate_up: Any, w_down: Any, keep_activation: Any) -> Any:
    mhmoe.check_experts(z, slot_weights, slot_of, offsets, w_gate_up, w_down)
    slots = slot_of.shape[0] if keep_activation else 0
    return z.new_empty(z.shape), z.new_empty((slots, w_gate_up.shape[2]))


@torch.library.custom_op(  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
    "tilewise::moe_experts_backward",
    mutates_args=(),
    schema="(Tensor dout, Tensor z, Tensor slot_weights, Tensor slot_of, Tensor offsets, Tensor w_gate_up, "
    "Tensor w_down, Tensor gate_up) -> (Tensor, Tensor, Tensor, Tensor)",
)
def _experts_backward_op(
    dout: Any, z: Any, slot_weights: Any, slot_of: Any, offsets: Any, w_gate_up: Any, w_down: Any, gate_up: Any
) -> Any:
    return mhmoe.experts_backward(dout, z, slot_weights, slot_of, offsets, w_gate_up, w_down, gate_up)


@_experts_backward_op.register_fake  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _(
    dout: Any, z: Any, slot_weights: Any, slot_of: Any, offsets: Any, w_gate_up: Any, w_down: Any, gate_up: Any
) -> Any:
    return (
        z.new_empty(z.shape),
        slot_weights.new_empty(slot_weights.shape, dtype=torch.float32),
        w_gate_up.new_empty(w_gate_up.shape),
        w_down.new_empty(w_down.shape),
    )


def _experts_setup(ctx: Any, inputs: Any, output: Any) -> None:
    z, slot_weights, slot_of, offsets, w_gate_up, w_down, _ = inputs
    ctx.save_for_backward(z, slot_weights, slot_of, offsets, w_gate_up, w_down, output[1])
    # the kept activation is never differentiated: without this autograd fills a zero gradient of its
    # shape every step (a 128 MiB memset, 40 us of the H200's 800 us step at T 4096 H 16 f 256 k 2)
    ctx.set_materialize_grads(False)


def _experts_backward(ctx: Any, dout: Any, _d_gate_up: Any) -> Any:
    if dout is None:  # the output took no part in the loss
        return None, None, None, None, None, None, None
    z, sw, slot_of, offsets, wgu, wd, gate_up = ctx.saved_tensors
    dz, dsw, dwgu, dwd = torch.ops.tilewise.moe_experts_backward(dout, z, sw, slot_of, offsets, wgu, wd, gate_up)
    return dz, dsw.to(sw.dtype), None, None, dwgu, dwd, None


_experts_op.register_autograd(_experts_backward, setup_context=_experts_setup)


def moe_experts(
    z: Tensor, slot_weights: Tensor, slot_of: Tensor, offsets: Tensor, w_gate_up: Tensor, w_down: Tensor
) -> Tensor:
    """out [R, d] = sum_j slot_weights[r, j] FFN_e(z[r]) over the sorted slots (see mhmoe.experts_forward).

    Eager without autograd: the fused inference path. Otherwise torch.ops.tilewise.moe_experts, which
    keeps the gate/up activation when a gradient is needed and differentiates in z, slot_weights,
    w_gate_up and w_down on the grouped GEMMs."""
    if not (_traced() or _needs_grad(z, slot_weights, w_gate_up, w_down)):
        return mhmoe.experts_forward(z, slot_weights, slot_of, offsets, w_gate_up, w_down)
    keep = _needs_grad(z, slot_weights, w_gate_up, w_down)
    return torch.ops.tilewise.moe_experts(z, slot_weights, slot_of, offsets, w_gate_up, w_down, keep)[0]


# --------------------------------------------------------------------------- moe (composite)

torch.library.define(
    "tilewise::moe",
    '(Tensor x, Tensor router_logits, Tensor w_gate_up, Tensor w_down, int top_k, str gate="softmax", '
    "bool normalize=True) -> Tensor",
)


@torch.library.impl("tilewise::moe", "CompositeImplicitAutograd")  # type: ignore[untyped-decorator]  # torch is read as Any
def _moe_composite(
    x: Any, router_logits: Any, w_gate_up: Any, w_down: Any, top_k: Any, gate: Any = "softmax", normalize: Any = True
) -> Any:
    """Routing and the sort in torch (so autograd differentiates the gate), the experts on moe_experts."""
    moe_layer.check_moe(x, router_logits, w_gate_up, w_down, top_k, gate)
    weights, experts = moe_layer.route(router_logits, top_k, gate, normalize)
    # the expert count is a weight dimension: specialise on it (permute caches its expert ids per count)
    order, offsets = moe_layer.permute(experts, int(w_gate_up.shape[0]))
    keep = _needs_grad(x, router_logits, w_gate_up, w_down)
    out, _ = torch.ops.tilewise.moe_experts(x, weights, order.to(torch.int32), offsets, w_gate_up, w_down, keep)
    return out


def moe(
    x: Tensor,
    router_logits: Tensor,
    w_gate_up: Tensor,
    w_down: Tensor,
    top_k: int,
    *,
    gate: str = "softmax",
    normalize: bool = True,
    configs: Any = None,
) -> Tensor:
    """MoE FFN: `tilewise.kernels.moe_layer.moe`, as torch.ops.tilewise.moe (differentiable there)."""
    if not (_traced() or _needs_grad(x, router_logits, w_gate_up, w_down)):
        return moe_layer.moe(
            x, router_logits, w_gate_up, w_down, top_k, gate=gate, normalize=normalize, configs=configs
        )
    _eager_only("moe", configs=configs)
    return torch.ops.tilewise.moe(x, router_logits, w_gate_up, w_down, top_k, gate, normalize)


# --------------------------------------------------------------------------- flash_ffn


@torch.library.custom_op(  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
    "tilewise::flash_ffn", mutates_args=(), schema="(Tensor z, Tensor w_gate, Tensor w_up, Tensor w_down) -> Tensor"
)
def _ffn_op(z: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    with torch.no_grad():  # FlashFFNFunction records nothing here: this op's own formula below does
        return ffn.flash_ffn(z, w_gate, w_up, w_down)


@_ffn_op.register_fake  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _(z: Any, w_gate: Any, w_up: Any, w_down: Any) -> Any:
    ffn.check_flash_ffn(z, w_gate, w_up, w_down)
    return z.new_empty(z.shape)


@torch.library.custom_op(  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
    "tilewise::flash_ffn_backward",
    mutates_args=(),
    schema="(Tensor dy, Tensor z, Tensor w_gate, Tensor w_up, Tensor w_down) -> (Tensor, Tensor, Tensor, Tensor)",
)
def _ffn_backward_op(
    dy: Any, z: Any, w_gate: Any, w_up: Any, w_down: Any
) -> Any:  # FlashFFNFunction's backward reads only saved_tensors and needs_input_grad from its context
    ctx = SimpleNamespace(saved_tensors=(z, w_gate, w_up, w_down), needs_input_grad=(True, True, True, True))
    return tuple(ffn.FlashFFNFunction.backward(ctx, dy))


@_ffn_backward_op.register_fake  # type: ignore[untyped-decorator]  # torch is read as Any (unchecked)
def _(dy: Any, z: Any, w_gate: Any, w_up: Any, w_down: Any) -> Any:
    return (
        z.new_empty(z.shape),
        w_gate.new_empty(w_gate.shape),
        w_up.new_empty(w_up.shape),
        w_down.new_empty(w_down.shape),
    )


def _ffn_setup(ctx: Any, inputs: Any, output: Any) -> None:
    ctx.save_for_backward(*inputs)


def _ffn_backward(ctx: Any, dy: Any) -> Any:
    return torch.ops.tilewise.flash_ffn_backward(dy, *ctx.saved_tensors)


_ffn_op.register_autograd(_ffn_backward, setup_context=_ffn_setup)


def flash_ffn(z: Tensor, w_gate: Tensor, w_up: Tensor, w_down: Tensor) -> Tensor:
    """Per-head fused SwiGLU FFN: `tilewise.kernels.ffn.flash_ffn`, as torch.ops.tilewise.flash_ffn."""
    if not _traced():
        return ffn.flash_ffn(z, w_gate, w_up, w_down)  # its own autograd.Function in eager
    return torch.ops.tilewise.flash_ffn(z, w_gate, w_up, w_down)


OPS = (
    "attention",
    "attention_backward",
    "decode_attention",
    "flash_ffn",
    "flash_ffn_backward",
    "grouped_matmul",
    "grouped_matmul_dw",
    "matmul",
    "moe",
    "moe_experts",
    "moe_experts_backward",
    "sum",
)

__all__ = [
    "OPS",
    "attention",
    "decode_attention",
    "flash_ffn",
    "grouped_matmul",
    "grouped_matmul_dw",
    "matmul",
    "moe",
    "moe_experts",
    "sum",
]
