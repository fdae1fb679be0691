"""MH-MoE: the FlashFFN idea carried to Mixture-of-Experts, routing per (token, head).

The tips document ends here: split the model dimension into heads, give every head its own
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
the scatter back to slot order in its epilogue. The kernel-side cost the seed warns about: the
rows an expert receives are the (token, head) slots of one head only, and the GEMMs have
K = d_h (gate/up) and N = d_h (down), so main loops are short (d_h / BLOCK_K steps) and M per
expert is T k / E_h; `tilewise explain moe --heads H` prints those numbers.

Training: with autograd on, the forward keeps the gate/up activation and `experts_backward` runs
the backward on the same grouped GEMMs (dX = dY W^T per expert) and on the grouped weight-gradient
kernel of `tilewise.kernels.grouped_dw` (dW_e = X_e^T dY_e, whose reduction runs over the expert's
own rows). The expert FFN is the custom op `torch.ops.tilewise.moe_experts`, so the layer traces
under `torch.compile(fullgraph=True)`. The float64 loop that specifies it lives beside the tests
(tests/mhmoe_reference.py); the torch._grouped_mm peer beside the benchmarks (tilewise.bench.mhmoe_peer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from tilewise.errors import InputError, positive_int
from tilewise.kernels import custom_ops

# ------------------------------------------------------------------------------ helpers


@dataclass
class Plan:
    """Routing of the T H rows, sorted by global expert.

    slot_of int32 [R k]: slot (row k + j) of each sorted position; token_of int32 [R k]: row of z
    (t H + h) of each sorted position; scale fp32 [R k]: routing weight of each sorted position;
    slot_weights fp32 [R k]: routing weight of each slot (slot order); offsets int32 [E]: cumulative
    ends per expert; rows = R = T H; top_k = k; experts = E.
    """

    slot_of: torch.Tensor
    token_of: torch.Tensor
    scale: torch.Tensor
    slot_weights: torch.Tensor
    offsets: torch.Tensor
    rows: int
    top_k: int
    experts: int


def route_heads(logits: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-(token, head) top-k: logits [T, H, E_h] -> (weights fp32 [T H, k], global experts int64 [T H, k]).

    Softmax over the head's own E_h experts, keep the top k, renormalise over them.
    """
    T, H, Eh = logits.shape
    scores = torch.softmax(logits.float(), dim=-1)
    w, local = torch.topk(scores, top_k, dim=-1)  # [T, H, k]
    w = w / w.sum(dim=-1, keepdim=True)
    head = torch.arange(H, device=logits.device).view(1, H, 1)
    experts = head * Eh + local
    return w.reshape(T * H, top_k), experts.reshape(T * H, top_k)


def plan(weights: torch.Tensor, experts: torch.Tensor, num_experts: int) -> Plan:
    """Sort the (row, expert) slots by expert (the MoE layer's `permute`: no host sync)."""
    from tilewise.kernels.moe_layer import permute

    R, k = experts.shape
    order, offsets = permute(experts, num_experts)
    flat_w = weights.reshape(-1).float()
    return Plan(
        slot_of=order.to(torch.int32).contiguous(),
        token_of=torch.div(order, k, rounding_mode="floor").to(torch.int32).contiguous(),
        scale=flat_w[order].contiguous(),
        slot_weights=flat_w.contiguous(),
        offsets=offsets,
        rows=R,
        top_k=k,
        experts=num_experts,
    )


# ----------------------------------------------------------------------- expert FFN paths


def _configs(rows: int, top_k: int, experts: int, d: int, f: int, dtype: torch.dtype, on_gpu: bool):
    from tilewise.kernels.moe_layer import moe_configs

    return moe_configs(rows, top_k, experts, d, f, dtype, on_gpu)


def _tile(slots: int, experts: int, n: int, k: int, dtype: torch.dtype, on_gpu: bool):
    """The grouped GEMM's own tile for the rows per expert (the backward's products are plain grouped GEMMs)."""
    from tilewise.kernels.grouped_gemm import choose_config

    return choose_config(slots / experts, n, k, dtype, on_gpu=on_gpu)


def check_experts(z, slot_weights, slot_of, offsets, w_gate_up, w_down) -> None:
    """Shapes and dtypes of the expert FFN's operands (the fake impl of torch.ops.tilewise.moe_experts runs it)."""
    if z.dim() != 2:
        raise InputError(f"z must have shape [rows, d], got {list(z.shape)}")
    R, d = z.shape
    if w_gate_up.dim() != 3 or w_gate_up.shape[1] != d or w_gate_up.shape[2] % 2:
        raise InputError(f"w_gate_up must have shape [experts, {d}, 2 f], got {list(w_gate_up.shape)}")
    E, f = w_gate_up.shape[0], w_gate_up.shape[2] // 2
    if tuple(w_down.shape) != (E, f, d):
        raise InputError(f"w_down must have shape [{E}, {f}, {d}], got {list(w_down.shape)}")
    if slot_weights.dim() != 2 or slot_weights.shape[0] != R:
        raise InputError(f"slot_weights must have shape [{R}, top_k], got {list(slot_weights.shape)}")
    if tuple(slot_of.shape) != (R * slot_weights.shape[1],) or slot_of.dtype != torch.int32:
        raise InputError(
            f"slot_of must be int32 [{R * slot_weights.shape[1]}], got {slot_of.dtype} {list(slot_of.shape)}"
        )
    if tuple(offsets.shape) != (E,) or offsets.dtype != torch.int32:
        raise InputError(f"offsets must be int32 [{E}], got {offsets.dtype} {list(offsets.shape)}")
    if w_gate_up.dtype != z.dtype or w_down.dtype != z.dtype:
        raise InputError(f"w_gate_up and w_down must have z's dtype {z.dtype}, got {w_gate_up.dtype}, {w_down.dtype}")


def experts_forward_fused(z: torch.Tensor, p: Plan, w_gate_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """Two persistent grouped GEMMs; z [R, d_h] -> [R, d_h]. Gather, GLU, scale and scatter are fused."""
    return experts_forward(z, p.slot_weights.view(p.rows, p.top_k), p.slot_of, p.offsets, w_gate_up, w_down)


def experts_forward(
    z: torch.Tensor,
    slot_weights: torch.Tensor,
    slot_of: torch.Tensor,
    offsets: torch.Tensor,
    w_gate_up: torch.Tensor,
    w_down: torch.Tensor,
) -> torch.Tensor:
    """out [R, d] = sum_j w[r, j] FFN_e(z[r]) for slot r k + j routed to expert e (inference, fused GLU).

    z [R, d]; slot_weights fp32 [R, k]; slot_of int32 [R k]: the slot of each sorted position;
    offsets int32 [E]; w_gate_up [E, d, 2 f]; w_down [E, f, d].
    """
    from tilewise.kernels.grouped_gemm import launch

    R, d = z.shape
    k = slot_weights.shape[1]
    f = w_down.shape[1]
    slots = R * k
    if slots == 0:
        return torch.zeros_like(z)
    cfg_up, cfg_down = _configs(R, k, offsets.shape[0], d, f, z.dtype, z.is_cuda)
    h = torch.empty((slots, f), dtype=z.dtype, device=z.device)  # expert order
    y = torch.empty((slots, d), dtype=z.dtype, device=z.device)  # slot order
    # sorted position r is slot slot_of[r] = row k + j: it reads z row slot_of[r] // k, is written to
    # y row slot_of[r] and scaled by that slot's weight
    launch(z, w_gate_up, offsets, h, f, cfg_up, rows=slots, glu=True, gather=slot_of, gather_div=k)
    launch(h, w_down, offsets, y, d, cfg_down, rows=slots, scatter=slot_of, scale=slot_weights.reshape(-1))
    return y if k == 1 else y.view(R, k, d).sum(dim=1)


def _glu(gu: torch.Tensor, f: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(g, u, silu(g)) in fp32 from the gate/up activation [S, 2 f]."""
    g = gu[:, :f].float()
    u = gu[:, f:].float()
    return g, u, torch.nn.functional.silu(g)


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
    add 2 of the 9 GEMM units of a training step), SiLU * mul runs in torch, the down GEMM keeps
    its fused scale and scatter.
    """
    from tilewise.kernels.grouped_gemm import launch

    R, d = z.shape
    k = slot_weights.shape[1]
    E, f = w_down.shape[0], w_down.shape[1]
    slots = R * k
    gu = torch.empty((slots, 2 * f), dtype=z.dtype, device=z.device)
    if slots == 0:
        return torch.zeros_like(z), gu
    on_gpu = z.is_cuda
    launch(z, w_gate_up, offsets, gu, 2 * f, _tile(slots, E, 2 * f, d, z.dtype, on_gpu), rows=slots,
           gather=slot_of, gather_div=k)  # fmt: skip
    _, u, sg = _glu(gu, f)
    a = (sg * u).to(z.dtype)
    y = torch.empty((slots, d), dtype=z.dtype, device=z.device)
    launch(a, w_down, offsets, y, d, _tile(slots, E, d, f, z.dtype, on_gpu), rows=slots, scatter=slot_of,
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

    Every product runs on tilewise's grouped GEMMs; nothing syncs with the host. `gu` may be empty
    ([0, 2 f]: the forward did not keep it), then the gate/up GEMM is recomputed.
    """
    from tilewise.kernels.grouped_dw import grouped_matmul_dw
    from tilewise.kernels.grouped_gemm import launch

    R, d = z.shape
    k = slot_weights.shape[1]
    E, f = w_down.shape[0], w_down.shape[1]
    slots = R * k
    dev, dt, on_gpu = z.device, z.dtype, z.is_cuda
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
    w_sorted = slot_weights.reshape(-1)[slot_of.long()].float()  # routing weight of each sorted position
    da = torch.empty((slots, f), dtype=dt, device=dev)
    launch(dout, w_down.transpose(1, 2), offsets, da, f, _tile(slots, E, f, d, dt, on_gpu), rows=slots,
           gather=slot_of, gather_div=k)  # fmt: skip
    g, u, sg = _glu(gu, f)
    a = sg * u
    da32 = da.float()
    dweights = torch.empty(slots, dtype=torch.float32, device=dev)
    dweights[slot_of.long()] = (a * da32).sum(dim=1)
    da32 = da32 * w_sorted[:, None]
    sig = torch.sigmoid(g)
    dgu = torch.cat((da32 * u * sig * (1 + g * (1 - sig)), da32 * sg), dim=1).to(dt)
    dz_slots = torch.empty((slots, d), dtype=dt, device=dev)
    launch(dgu, w_gate_up.transpose(1, 2), offsets, dz_slots, d, _tile(slots, E, d, 2 * f, dt, on_gpu), rows=slots,
           scatter=slot_of)  # fmt: skip
    dz = dz_slots if k == 1 else dz_slots.view(R, k, d).sum(dim=1)
    dw_down = grouped_matmul_dw(a.to(dt), dout, offsets, dy_gather=slot_of, gather_div=k, dy_scale=w_sorted)
    dw_gate_up = grouped_matmul_dw(z, dgu, offsets, x_gather=slot_of, gather_div=k)
    return dz, dweights.view(R, k), dw_gate_up, dw_down


def experts_forward_public(z: torch.Tensor, p: Plan, w_gate_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """The same on the public `grouped_matmul` only: gather, GLU, scale and scatter in torch
    (differentiable through grouped_matmul's own autograd formula)."""
    from tilewise.kernels import grouped_matmul

    R, d = z.shape
    f = w_down.shape[1]
    xs = z[p.token_of.long()]  # [R k, d_h] expert order
    gu = grouped_matmul(xs, w_gate_up, p.offsets, check_offsets=False)
    a = torch.nn.functional.silu(gu[:, :f]) * gu[:, f:]
    ys = grouped_matmul(a.contiguous(), w_down, p.offsets, check_offsets=False) * p.scale[:, None].to(z.dtype)
    y = torch.zeros((R * p.top_k, d), dtype=z.dtype, device=z.device).index_copy(0, p.slot_of.long(), ys)
    return y.view(R, p.top_k, d).sum(dim=1)


# ------------------------------------------------------------------------------ the layer


class MultiHeadMoE(torch.nn.Module):
    """x [..., d_model] -> W_in -> per-(token, head) top-k over the head's experts -> W_out.

    Parameters: w_in [d_model, H d_h], w_router [H, d_h, E_h], w_gate_up [H E_h, d_h, 2 f]
    (gate columns first), w_down [H E_h, f, d_h], w_out [H d_h, d_model]; E_h = experts_per_head,
    f = expert_width. `impl`: "fused" (grouped GEMMs with fused gather/GLU/scatter; the backward
    runs on the grouped GEMM and the grouped dW kernel, see `experts_backward`) or "public"
    (grouped_matmul + torch glue, differentiable through grouped_matmul's autograd formula).
    """

    IMPLS = ("fused", "public")

    def __init__(
        self,
        d_model: int,
        heads: int,
        head_dim: int,
        experts_per_head: int,
        expert_width: int,
        top_k: int,
        *,
        impl: str = "fused",
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.d_model = positive_int("d_model", d_model)
        self.heads = positive_int("heads", heads)
        self.head_dim = positive_int("head_dim", head_dim)
        self.experts_per_head = positive_int("experts_per_head", experts_per_head)
        self.expert_width = positive_int("expert_width", expert_width)
        self.top_k = positive_int("top_k", top_k, maximum=self.experts_per_head)
        if impl not in self.IMPLS:
            raise InputError(f"impl must be one of {list(self.IMPLS)}, got {impl!r}")
        self.impl = impl
        kw = dict(device=device, dtype=dtype)
        H, d, Eh, f = self.heads, self.head_dim, self.experts_per_head, self.expert_width
        self.w_in = torch.nn.Parameter(torch.empty(self.d_model, H * d, **kw))
        self.w_router = torch.nn.Parameter(torch.empty(H, d, Eh, **kw))
        self.w_gate_up = torch.nn.Parameter(torch.empty(H * Eh, d, 2 * f, **kw))
        self.w_down = torch.nn.Parameter(torch.empty(H * Eh, f, d, **kw))
        self.w_out = torch.nn.Parameter(torch.empty(H * d, self.d_model, **kw))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with torch.no_grad():
            for w, fan_in in (
                (self.w_in, self.d_model),
                (self.w_router, self.head_dim),
                (self.w_gate_up, self.head_dim),
                (self.w_down, self.expert_width),
                (self.w_out, self.heads * self.head_dim),
            ):
                w.normal_(0.0, 1.0 / math.sqrt(fan_in))

    @property
    def num_experts(self) -> int:
        return self.heads * self.experts_per_head

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x [T, d_model] -> (z [T H, d_h], weights fp32 [T H, k], global experts int64 [T H, k])."""
        if x.dim() != 2 or x.shape[-1] != self.d_model:
            raise InputError(f"x must have shape [tokens, {self.d_model}], got {list(x.shape)}")
        T = x.shape[0]
        z = x @ self.w_in  # [T, H d_h]
        zh = z.view(T, self.heads, self.head_dim).transpose(0, 1)  # [H, T, d_h]
        logits = torch.bmm(zh, self.w_router).transpose(0, 1)  # [T, H, E_h]
        weights, experts = route_heads(logits, self.top_k)
        return z.reshape(T * self.heads, self.head_dim), weights, experts

    def experts_forward(self, z: torch.Tensor, p: Plan) -> torch.Tensor:
        """The expert FFN of the routed rows z [T H, d_h] -> [T H, d_h] (differentiable either way)."""
        if self.impl == "public":
            return experts_forward_public(z, p, self.w_gate_up, self.w_down)
        return custom_ops.moe_experts(
            z, p.slot_weights.view(p.rows, p.top_k), p.slot_of, p.offsets, self.w_gate_up, self.w_down
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.d_model:
            raise InputError(f"x must have shape [..., {self.d_model}], got {list(x.shape)}")
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.d_model)
        T = x2.shape[0]
        z, weights, experts = self.route(x2)
        y = self.experts_forward(z.contiguous(), plan(weights, experts, self.num_experts))
        out = y.reshape(T, self.heads * self.head_dim) @ self.w_out
        return out.view(*lead, self.d_model)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, heads={self.heads}, head_dim={self.head_dim}, experts_per_head="
            f"{self.experts_per_head}, expert_width={self.expert_width}, top_k={self.top_k}, impl={self.impl}"
        )


__all__ = [
    "MultiHeadMoE",
    "Plan",
    "check_experts",
    "experts_backward",
    "experts_forward",
    "experts_forward_fused",
    "experts_forward_public",
    "experts_forward_train",
    "plan",
    "route_heads",
]
