"""MH-MoE: the FlashFFN idea carried to Mixture-of-Experts, routing per (token, head).

The idea: split the model dimension into heads, give every head its own
experts, and route each (token, head) pair on its own, so each head's experts are isolated.
The layer:

    x [T, D] -> z = x W_in, viewed as T x H rows of d_h           (row r = t H + h)
    logits[t, h] = z[t, h] Wr[h]                                   Wr [H, d_h, E_h]
    top-k of softmax(logits[t, h]) -> k experts of head h, weights renormalised over the k
    y[t, h] = sum_j w_j (silu(z[t, h] Wg[e_j]) * (z[t, h] Wu[e_j])) Wd[e_j]
    out = concat_h(y[t, h]) W_out

Global expert e = h E_h + local expert, so the T H k (row, expert) slots sort into H E_h groups
and the expert FFN is two persistent grouped GEMMs (tilewise.kernels.grouped_gemm): gate/up with
the row gather in its loads and SiLU * mul in its epilogue, then down with the routing weight and
the scatter back to slot order in its epilogue. The kernel-side cost: the
rows an expert receives are the (token, head) slots of one head only, and the GEMMs have
K = d_h (gate/up) and N = d_h (down), so main loops are short (d_h / BLOCK_K steps) and M per
expert is T k / E_h; `tilewise explain moe --heads H` prints those numbers.

Training: with autograd on, the forward keeps the gate/up activation and `experts_backward` runs
the backward on the same grouped GEMMs (dX = dY W^T per expert) and on the grouped weight-gradient
kernel of `tilewise.kernels.grouped_dw` (dW_e = X_e^T dY_e, whose reduction runs over the expert's
own rows); SiLU * mul and its backward (with the routing weight's gradient) are one Triton pass
each way (`glu`, `glu_backward`). The expert FFN is the custom op `torch.ops.tilewise.moe_experts`, so the layer
(`tilewise.kernels.layers.MultiHeadMoE`, above the op registry) traces under `torch.compile(fullgraph=True)`. The float64 loop that specifies it lives beside the tests
(tests/mhmoe_reference.py); the torch._grouped_mm peer beside the benchmarks (tilewise.bench.mhmoe_peer).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from tilewise.errors import InputError
from tilewise.kernels.grouped_dw import grouped_matmul_dw
from tilewise.kernels.grouped_gemm import choose_config, launch, launch_plan, launch_planned
from tilewise.kernels.moe_layer import default_configs, permute
from tilewise.kernels.utils import PlanCache, gpu_key, interpreting, signature
from tilewise.util import cdiv

_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

# ------------------------------------------------------------------------------ helpers


@dataclass
class Plan:
    """Routing of the T H rows, sorted by global expert.

    slot_of int64 [R k]: slot (row k + j) of each sorted position; token_of int64 [R k]: row of z
    (t H + h) of each sorted position; scale fp32 [R k]: routing weight of each sorted position;
    slot_weights fp32 [R k]: routing weight of each slot (slot order); offsets int32 [E]: cumulative
    ends per expert; rows = R = T H; top_k = k; experts = E. The indices stay int64 (what torch.sort
    returns): a torch consumer indexes with them as they are, the grouped GEMMs read either width.
    """

    slot_of: torch.Tensor
    token_of: torch.Tensor
    scale: torch.Tensor
    slot_weights: torch.Tensor
    offsets: torch.Tensor
    rows: int
    top_k: int
    experts: int


@functools.lru_cache(maxsize=64)
def _head_base(heads: int, experts_per_head: int, device: torch.device) -> torch.Tensor:
    """[1, H, 1] int64: the first global expert of each head (h E_h), made once per layout."""
    return (torch.arange(heads, device=device) * experts_per_head).view(1, heads, 1)


def route_heads(logits: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-(token, head) top-k: logits [T, H, E_h] -> (weights fp32 [T H, k], global experts int64 [T H, k]).

    Softmax over the head's own E_h experts, keep the top k, renormalise over them; that equals a
    softmax over the k kept logits (the E_h-wide normaliser cancels), and the softmax is monotonic,
    so the top k of the logits are picked and only they are normalised: top-k, softmax, add the
    head's first expert, three launches where the E_h-wide form took eight (each CUDA
    launch costs the H200's host ~10 us).
    """
    T, H, Eh = logits.shape
    top, local = torch.topk(logits, top_k, dim=-1)  # [T, H, k]
    w = torch.softmax(top, dim=-1, dtype=torch.float32)
    # the cached base is a real tensor: a trace (fake or functional tensors) builds its own
    if type(local) is torch.Tensor and not torch.compiler.is_compiling():
        base = _head_base(H, Eh, local.device)
    else:
        base = (torch.arange(H, device=local.device) * Eh).view(1, H, 1)
    experts = local + base
    return w.reshape(T * H, top_k), experts.reshape(T * H, top_k)


def plan(weights: torch.Tensor, experts: torch.Tensor, num_experts: int) -> Plan:
    """Sort the (row, expert) slots by expert (the MoE layer's `permute`: no host sync).

    The fused path needs only slot_of and offsets (`MultiHeadMoE.experts` sorts without the rest);
    token_of and scale are for torch consumers (the public path, the torch._grouped_mm peer)."""
    R, k = experts.shape
    order, offsets = permute(experts, num_experts)
    flat_w = weights.reshape(-1).float()
    return Plan(
        slot_of=order,
        token_of=torch.div(order, k, rounding_mode="floor"),
        scale=flat_w[order],
        slot_weights=flat_w.contiguous(),
        offsets=offsets,
        rows=R,
        top_k=k,
        experts=num_experts,
    )


# ----------------------------------------------------------------------- config choice


# Tiles of the training GEMMs: "advised" (the grouped GEMM's advisor, what grouped_matmul uses) or "table"
# (choose_config's table, which ignores N: 256-column tiles on MH-MoE's N = d_h 128 products, half of each
# tile masked). benchmarks/mhmoe_train.py times both beside the peer.
TRAIN_TILES = "advised"


def _tile(slots: int, experts: int, n: int, k: int, dtype: torch.dtype, device: torch.device) -> Any:
    """The grouped GEMM's tile for the rows per expert (the training products are plain grouped GEMMs)."""
    if TRAIN_TILES == "advised" and device.type == "cuda":
        return choose_config(slots / experts, n, k, dtype, on_gpu=True, experts=experts, gpu=gpu_key(device))
    return choose_config(slots / experts, n, k, dtype, on_gpu=device.type == "cuda")


def _glu_block(f: int) -> tuple[int, int]:
    """(rows, columns) of one GLU tile: 32 x up to 128 on the GPU (memory-bound, 4 warps hold 32 elements a
    thread); under the interpreter 16 x 32 so the tests cross both edges."""
    if interpreting():
        return 16, 32
    return 32, min(128, max(16, triton.next_power_of_2(f)))


# ------------------------------------------------------------------------------ kernels


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _glu_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: its arguments stay unannotated (Triton types them)
    gu_ptr, a_ptr, S, F, stride_gu, stride_a, BLOCK_S: tl.constexpr, BLOCK_F: tl.constexpr
):
    """a [S, F] = silu(g) * u of the gate/up activation gu [S, 2 F] = [g | u], in fp32, one rounding."""
    rows = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    cols = tl.program_id(1) * BLOCK_F + tl.arange(0, BLOCK_F)
    mask = (rows < S)[:, None] & (cols < F)[None, :]
    r = rows.to(tl.int64)[:, None]
    src = gu_ptr + r * stride_gu + cols[None, :]
    g = tl.load(src, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(src + F, mask=mask, other=0.0).to(tl.float32)
    a = g * tl.sigmoid(g) * u
    tl.store(a_ptr + r * stride_a + cols[None, :], a.to(a_ptr.dtype.element_ty), mask=mask)


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def _glu_backward_kernel(  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    gu_ptr,  # [S, 2 F] gate/up activation, expert order
    da_ptr,  # [S, F] dL/da (unweighted: dout rows through Wd^T), expert order
    w_ptr,  # fp32 [S] routing weight of each slot (slot order)
    slot_ptr,  # int [S] slot of each sorted position
    dgu_ptr,  # [S, 2 F] out: [dg | du] with the routing weight applied
    a_ptr,  # [S, F] out: silu(g) u (the down GEMM's input, for its weight gradient)
    dw_ptr,  # fp32 [S] out, slot order: <a, da> of each slot (the routing weight's gradient)
    ws_ptr,  # fp32 [S] out, expert order: the routing weight of each sorted position
    S,
    F,
    stride_gu,
    stride_da,
    stride_dgu,
    stride_a,
    BLOCK_S: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    row_mask = rows < S
    slot = tl.load(slot_ptr + rows, mask=row_mask, other=0).to(tl.int64)
    w = tl.load(w_ptr + slot, mask=row_mask, other=0.0).to(tl.float32)
    r = rows.to(tl.int64)[:, None]
    dot = tl.zeros((BLOCK_S,), dtype=tl.float32)
    for f0 in range(0, F, BLOCK_F):
        cols = f0 + tl.arange(0, BLOCK_F)
        mask = row_mask[:, None] & (cols < F)[None, :]
        src = gu_ptr + r * stride_gu + cols[None, :]
        g = tl.load(src, mask=mask, other=0.0).to(tl.float32)
        u = tl.load(src + F, mask=mask, other=0.0).to(tl.float32)
        da = tl.load(da_ptr + r * stride_da + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        sig = tl.sigmoid(g)
        sg = g * sig
        a = sg * u
        dot += tl.sum(a * da, axis=1)
        da = da * w[:, None]
        dst = dgu_ptr + r * stride_dgu + cols[None, :]
        tl.store(dst, (da * u * sig * (1.0 + g * (1.0 - sig))).to(dgu_ptr.dtype.element_ty), mask=mask)
        tl.store(dst + F, (da * sg).to(dgu_ptr.dtype.element_ty), mask=mask)
        tl.store(a_ptr + r * stride_a + cols[None, :], a.to(a_ptr.dtype.element_ty), mask=mask)
    tl.store(dw_ptr + slot, dot, mask=row_mask)
    tl.store(ws_ptr + rows, w, mask=row_mask)


# ----------------------------------------------------------------------- launchers with checks


def check_experts(z: Any, slot_weights: Any, slot_of: Any, offsets: Any, w_gate_up: Any, w_down: Any) -> None:
    """Types, shapes, dtypes and devices of the expert FFN's operands (the fake impl of
    torch.ops.tilewise.moe_experts runs it; eager calls run it once per signature)."""
    for name, t in (("z", z), ("slot_weights", slot_weights), ("slot_of", slot_of), ("offsets", offsets),
                    ("w_gate_up", w_gate_up), ("w_down", w_down)):  # fmt: skip
        if not isinstance(t, torch.Tensor):
            raise InputError(f"{name} must be a torch tensor, got {type(t).__name__}")
    if z.dim() != 2:
        raise InputError(f"z must have shape [rows, d], got {list(z.shape)}")
    if z.dtype not in _DTYPES:
        raise InputError(f"z must be float16, bfloat16 or float32, got {z.dtype}")
    R, d = z.shape
    if w_gate_up.dim() != 3 or w_gate_up.shape[1] != d or w_gate_up.shape[2] % 2:
        raise InputError(f"w_gate_up must have shape [experts, {d}, 2 f], got {list(w_gate_up.shape)}")
    E, f = w_gate_up.shape[0], w_gate_up.shape[2] // 2
    if tuple(w_down.shape) != (E, f, d):
        raise InputError(f"w_down must have shape [{E}, {f}, {d}], got {list(w_down.shape)}")
    if slot_weights.dim() != 2 or slot_weights.shape[0] != R or not slot_weights.is_floating_point():
        raise InputError(
            f"slot_weights must be a float tensor of shape [{R}, top_k], got {slot_weights.dtype} "
            f"{list(slot_weights.shape)}"
        )
    slots = R * slot_weights.shape[1]
    if tuple(slot_of.shape) != (slots,) or slot_of.dtype not in (torch.int32, torch.int64):
        raise InputError(f"slot_of must be int32 or int64 [{slots}], got {slot_of.dtype} {list(slot_of.shape)}")
    if tuple(offsets.shape) != (E,) or offsets.dtype != torch.int32:
        raise InputError(f"offsets must be int32 [{E}], got {offsets.dtype} {list(offsets.shape)}")
    if w_gate_up.dtype != z.dtype or w_down.dtype != z.dtype:
        raise InputError(f"w_gate_up and w_down must have z's dtype {z.dtype}, got {w_gate_up.dtype}, {w_down.dtype}")
    devs = {t.device for t in (z, slot_weights, slot_of, offsets, w_gate_up, w_down)}
    if len(devs) != 1:
        raise InputError(f"z, slot_weights, slot_of, offsets, w_gate_up and w_down must be on one device, "
                         f"got {sorted(map(str, devs))}")  # fmt: skip


class _ForwardPlan:
    """A checked inference call: sizes and the two grouped GEMMs' launch plans."""

    __slots__ = ("d", "down", "f", "rows", "slots", "top_k", "up")
    d: int
    down: Any  # the down GEMM's launch plan (grouped_gemm.launch_plan); None for no slots
    f: int
    rows: int
    slots: int  # rows x top_k
    top_k: int
    up: Any  # the gate/up GEMM's launch plan


# Checked inference calls by signature: the checks, the tile choice and the launch plans run once per
# signature; a repeat pays 6 signatures and 2 launches (grouped_gemm.launch would look up each GEMM again).
_FWD_PLANS = PlanCache()


def experts_forward(
    z: torch.Tensor,
    slot_weights: torch.Tensor,
    slot_of: torch.Tensor,
    offsets: torch.Tensor,
    w_gate_up: torch.Tensor,
    w_down: torch.Tensor,
) -> torch.Tensor:
    """out [R, d] = sum_j w[r, j] FFN_e(z[r]) for slot r k + j routed to expert e (inference, fused GLU).

    z [R, d]; slot_weights float [R, k]; slot_of int32 or int64 [R k]: the slot of each sorted
    position; offsets int32 [E]; w_gate_up [E, d, 2 f]; w_down [E, f, d]. Values are trusted (no
    host sync: CUDA graphs capture it); shapes, dtypes and devices are checked once per signature.
    """
    key: tuple[Any, ...] | None
    fp: _ForwardPlan | None
    try:
        key = (signature(z), signature(slot_weights), signature(slot_of), signature(offsets), signature(w_gate_up),
               signature(w_down))  # fmt: skip
        fp = _FWD_PLANS.get(key)
    except (AttributeError, TypeError):  # not tensors: the checks refuse them
        key, fp = None, None
    h = y = None
    if fp is None:
        check_experts(z, slot_weights, slot_of, offsets, w_gate_up, w_down)
        fp = _ForwardPlan()
        fp.rows, fp.d = z.shape
        fp.top_k, fp.f = slot_weights.shape[1], w_down.shape[1]
        fp.slots = fp.rows * fp.top_k
        fp.up = fp.down = None
        if fp.slots:
            # the MoE layer's tiles and its rule for TMA descriptors (none where the GEMMs are too short to
            # hide their host cost: three descriptors were ~20 us of the H200 host's 609 us per layer call)
            cfg_up, cfg_down = default_configs(z, w_gate_up, fp.top_k)
            h = torch.empty((fp.slots, fp.f), dtype=z.dtype, device=z.device)
            y = torch.empty((fp.slots, fp.d), dtype=z.dtype, device=z.device)
            scale = slot_weights.reshape(-1)
            fp.up = launch_plan(z, w_gate_up, h, fp.f, cfg_up, rows=fp.slots, glu=True, gather=slot_of,
                                gather_div=fp.top_k)  # fmt: skip
            fp.down = launch_plan(h, w_down, y, fp.d, cfg_down, rows=fp.slots, scatter=slot_of, scale=scale)
        if key is not None:
            _FWD_PLANS.put(key, fp)
    if not fp.slots:
        return torch.zeros_like(z)
    if h is None:
        h = torch.empty((fp.slots, fp.f), dtype=z.dtype, device=z.device)  # expert order
        y = torch.empty((fp.slots, fp.d), dtype=z.dtype, device=z.device)  # slot order
    # sorted position r is slot slot_of[r] = row k + j: it reads z row slot_of[r] // k, is written to
    # y row slot_of[r] and scaled by that slot's weight
    launch_planned(fp.up, z, w_gate_up, offsets, h, gather=slot_of)
    launch_planned(fp.down, h, w_down, offsets, y, scatter=slot_of, scale=slot_weights.reshape(-1))
    assert y is not None  # allocated above: the plan has slots
    return y if fp.top_k == 1 else y.view(fp.rows, fp.top_k, fp.d).sum(dim=1)


def glu(gu: torch.Tensor) -> torch.Tensor:
    """silu(g) * u of a contiguous gate/up activation [S, 2 f] = [g | u] -> [S, f], fp32 math, one Triton launch
    (torch took five fp32 passes over [S, f]: ~1.2 GB of traffic at MH-MoE's T 4096 H 16 f 256, k 2)."""
    S, f = gu.shape[0], gu.shape[1] // 2
    a = torch.empty((S, f), dtype=gu.dtype, device=gu.device)
    if S:
        bs, bf = _glu_block(f)
        _glu_kernel[(cdiv(S, bs), cdiv(f, bf))](gu, a, S, f, gu.stride(0), a.stride(0), BLOCK_S=bs, BLOCK_F=bf)
    return a


def glu_backward(gu: torch.Tensor, da: torch.Tensor, slot_weights: torch.Tensor, slot_of: torch.Tensor) -> Any:
    """The GLU's and the routing weight's backward in one pass over the sorted rows (fp32 math).

    gu [S, 2 f] and da [S, f] contiguous, expert order; slot_weights [S] (slot order); slot_of [S].
    Returns (dgu [S, 2 f] = w [da u silu'(g) | da silu(g)], a [S, f] = silu(g) u, dweights fp32 [S] in slot
    order = <a, da>, w_sorted fp32 [S] = the weight of each sorted position). torch took ~15 fp32 passes
    over [S, f] for the same (T 4096 H 16 f 256 k 2: ~4 GB, ~0.9 ms of the H200's 4.8 TB/s).
    """
    S, f = da.shape
    dev = da.device
    dgu = torch.empty((S, 2 * f), dtype=gu.dtype, device=dev)
    a = torch.empty((S, f), dtype=gu.dtype, device=dev)
    dweights = torch.empty(S, dtype=torch.float32, device=dev)
    w_sorted = torch.empty(S, dtype=torch.float32, device=dev)
    if S:
        bs, bf = _glu_block(f)
        _glu_backward_kernel[(cdiv(S, bs),)](
            gu, da, slot_weights, slot_of, dgu, a, dweights, w_sorted, S, f,
            gu.stride(0), da.stride(0), dgu.stride(0), a.stride(0), BLOCK_S=bs, BLOCK_F=bf,
        )  # fmt: skip
    return dgu, a, dweights, w_sorted


def experts_forward_fused(z: torch.Tensor, p: Plan, w_gate_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """Two persistent grouped GEMMs; z [R, d_h] -> [R, d_h]. Gather, GLU, scale and scatter are fused."""
    return experts_forward(z, p.slot_weights.view(p.rows, p.top_k), p.slot_of, p.offsets, w_gate_up, w_down)


def experts_forward_train(
    z: torch.Tensor,
    slot_weights: torch.Tensor,
    slot_of: torch.Tensor,
    offsets: torch.Tensor,
    w_gate_up: torch.Tensor,
    w_down: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The forward for training: (out [R, d], gu [R k, 2 f] in expert order, kept for the backward).

    The gate/up GEMM writes both halves (the backward needs g and u, and recomputing them would
    add 2 of the 9 GEMM units of a training step), SiLU * mul is one Triton pass (`glu`), the down
    GEMM keeps its fused scale and scatter.
    """
    R, d = z.shape
    k = slot_weights.shape[1]
    E, f = w_down.shape[0], w_down.shape[1]
    slots = R * k
    gu = torch.empty((slots, 2 * f), dtype=z.dtype, device=z.device)
    if slots == 0:
        return torch.zeros_like(z), gu
    dev = z.device
    launch(z, w_gate_up, offsets, gu, 2 * f, _tile(slots, E, 2 * f, d, z.dtype, dev), rows=slots,
           gather=slot_of, gather_div=k)  # fmt: skip
    a = glu(gu)
    y = torch.empty((slots, d), dtype=z.dtype, device=z.device)
    launch(a, w_down, offsets, y, d, _tile(slots, E, d, f, z.dtype, dev), rows=slots, scatter=slot_of,
           scale=slot_weights.reshape(-1))  # fmt: skip
    return (y if k == 1 else y.view(R, k, d).sum(dim=1)), gu


def experts_backward(
    dout: torch.Tensor,
    z: torch.Tensor,
    slot_weights: torch.Tensor,
    slot_of: torch.Tensor,
    offsets: torch.Tensor,
    w_gate_up: torch.Tensor,
    w_down: torch.Tensor,
    gu: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of `experts_forward_train`: (dz [R, d], dweights fp32 [R, k], dw_gate_up, dw_down).

    With sorted position r (slot s = slot_of[r], row s // k, weight w_r, expert e), a = silu(g) u:

        da_r  = dout[s // k] Wd_e^T                         grouped GEMM, dout rows gathered in its loads
        dw_r  = <a_r, da_r>                                 the routing weight's gradient (fp32)
        dg, du = w_r da_r u silu'(g), w_r da_r silu(g)      elementwise, fp32
        dz[s // k] += [dg du]_r Wgu_e^T                     grouped GEMM, scattered to slot order, summed over k
        dWd_e  = a_e^T (w dout[s // k])_e                   grouped dW GEMM, gather and scale in its loads
        dWgu_e = z[s // k]_e^T [dg du]_e                    grouped dW GEMM, gather in its loads

    dw_r, dg, du and a come out of one Triton pass (`glu_backward`). Every product runs on tilewise's
    grouped GEMMs; nothing syncs with the host. `gu` may be empty ([0, 2 f]: the forward did not keep
    it), then the gate/up GEMM is recomputed.
    """

    R, d = z.shape
    k = slot_weights.shape[1]
    E, f = w_down.shape[0], w_down.shape[1]
    slots = R * k
    dev, dt = z.device, z.dtype
    if slots == 0:
        return (
            torch.zeros_like(z),
            torch.zeros_like(slot_weights),
            torch.zeros_like(w_gate_up),
            torch.zeros_like(w_down),
        )
    if gu.shape[0] != slots:
        _, gu = experts_forward_train(z, slot_weights, slot_of, offsets, w_gate_up, w_down)
    dout = dout.to(dt)
    dout = dout if dout.stride(-1) == 1 else dout.contiguous()
    da = torch.empty((slots, f), dtype=dt, device=dev)
    launch(dout, w_down.transpose(1, 2), offsets, da, f, _tile(slots, E, f, d, dt, dev), rows=slots,
           gather=slot_of, gather_div=k)  # fmt: skip
    dgu, a, dweights, w_sorted = glu_backward(gu.contiguous(), da, slot_weights.reshape(-1), slot_of)
    dz_slots = torch.empty((slots, d), dtype=dt, device=dev)
    launch(dgu, w_gate_up.transpose(1, 2), offsets, dz_slots, d, _tile(slots, E, d, 2 * f, dt, dev), rows=slots,
           scatter=slot_of)  # fmt: skip
    dz = dz_slots if k == 1 else dz_slots.view(R, k, d).sum(dim=1)
    dw_down = grouped_matmul_dw(a, dout, offsets, dy_gather=slot_of, gather_div=k, dy_scale=w_sorted)
    dw_gate_up = grouped_matmul_dw(z, dgu, offsets, x_gather=slot_of, gather_div=k)
    return dz, dweights.view(R, k), dw_gate_up, dw_down


__all__ = [
    "Plan",
    "check_experts",
    "experts_backward",
    "experts_forward",
    "experts_forward_fused",
    "experts_forward_train",
    "glu",
    "glu_backward",
    "plan",
    "route_heads",
]
