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

Forward only on the fused path; with autograd enabled the expert FFN falls back to a plain torch
loop over experts (differentiable, slow) so the layer can still be trained in tests.
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass

import torch

from tilewise.errors import InputError, positive_int

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


@functools.lru_cache(maxsize=1)
def _launch_takes_gather_div() -> bool:
    from tilewise.kernels.grouped_gemm import _launch

    return "gather_div" in inspect.signature(_launch).parameters


def experts_forward_fused(z: torch.Tensor, p: Plan, w_gate_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """Two persistent grouped GEMMs; z [R, d_h] -> [R, d_h]. Gather, GLU, scale and scatter are fused."""
    from tilewise.kernels.grouped_gemm import _launch
    from tilewise.kernels.moe_layer import moe_configs

    R, d = z.shape
    f = w_down.shape[1]
    slots = R * p.top_k
    out_dtype = z.dtype
    if slots == 0:
        return torch.zeros_like(z)
    cfg_up, cfg_down = moe_configs(R, p.top_k, p.experts, d, f, z.dtype, z.is_cuda)
    h = torch.empty((slots, f), dtype=out_dtype, device=z.device)  # expert order
    y = torch.empty((slots, d), dtype=out_dtype, device=z.device)  # slot order
    if _launch_takes_gather_div():
        # sorted position r is slot slot_of[r] = row k + j: it reads z row slot_of[r] // k, is written to
        # y row slot_of[r] and scaled by that slot's weight
        _launch(z, w_gate_up, p.offsets, h, f, cfg_up, rows=slots, glu=True, gather=p.slot_of, gather_div=p.top_k)
        _launch(h, w_down, p.offsets, y, d, cfg_down, rows=slots, scatter=p.slot_of, scale=p.slot_weights)
    else:  # the grouped GEMM's first interface: gather by row, scale by sorted position
        _launch(z, w_gate_up, p.offsets, h, f, cfg_up, rows=slots, glu=True, gather=p.token_of)
        _launch(h, w_down, p.offsets, y, d, cfg_down, rows=slots, scatter=p.slot_of, scale=p.scale)
    return y if p.top_k == 1 else y.view(R, p.top_k, d).sum(dim=1)


def experts_forward_public(z: torch.Tensor, p: Plan, w_gate_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """The same on the public `grouped_matmul` only: gather, GLU, scale and scatter in torch."""
    from tilewise.kernels.grouped_gemm import grouped_matmul

    R, d = z.shape
    f = w_down.shape[1]
    xs = z[p.token_of.long()]  # [R k, d_h] expert order
    gu = grouped_matmul(xs, w_gate_up, p.offsets, check_offsets=False)
    a = torch.nn.functional.silu(gu[:, :f]) * gu[:, f:]
    ys = grouped_matmul(a.contiguous(), w_down, p.offsets, check_offsets=False) * p.scale[:, None].to(z.dtype)
    y = torch.empty((R * p.top_k, d), dtype=z.dtype, device=z.device)
    y[p.slot_of.long()] = ys
    return y.view(R, p.top_k, d).sum(dim=1)


def experts_forward_torch(z: torch.Tensor, p: Plan, w_gate_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """The peer: the same routing on torch._grouped_mm (CUDA, Hopper), gather/GLU/scale/scatter in torch."""
    R, d = z.shape
    f = w_down.shape[1]
    xs = z[p.token_of.long()]
    gu = torch._grouped_mm(xs, w_gate_up, offs=p.offsets)
    a = torch.nn.functional.silu(gu[:, :f]) * gu[:, f:]
    ys = torch._grouped_mm(a, w_down, offs=p.offsets) * p.scale[:, None].to(z.dtype)
    y = torch.empty((R * p.top_k, d), dtype=z.dtype, device=z.device)
    y[p.slot_of.long()] = ys
    return y.view(R, p.top_k, d).sum(dim=1)


def experts_forward_loop(
    z: torch.Tensor,
    weights: torch.Tensor,
    experts: torch.Tensor,
    w_gate_up: torch.Tensor,
    w_down: torch.Tensor,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The specification (and the differentiable fallback): a loop over experts in `dtype`."""
    dtype = dtype or z.dtype
    f = w_down.shape[1]
    zd = z.to(dtype)
    out = torch.zeros(z.shape, dtype=dtype, device=z.device)
    for e in torch.unique(experts).tolist():
        row, slot = torch.nonzero(experts == e, as_tuple=True)
        g = zd[row] @ w_gate_up[e, :, :f].to(dtype)
        u = zd[row] @ w_gate_up[e, :, f:].to(dtype)
        y = (torch.nn.functional.silu(g) * u) @ w_down[e].to(dtype)
        out = out.index_add(0, row, y * weights[row, slot].to(dtype)[:, None])
    return out


# ------------------------------------------------------------------------------ the layer


class MultiHeadMoE(torch.nn.Module):
    """x [..., d_model] -> W_in -> per-(token, head) top-k over the head's experts -> W_out.

    Parameters: w_in [d_model, H d_h], w_router [H, d_h, E_h], w_gate_up [H E_h, d_h, 2 f]
    (gate columns first), w_down [H E_h, f, d_h], w_out [H d_h, d_model]; E_h = experts_per_head,
    f = expert_width. `impl`: "fused" (grouped GEMM with fused gather/GLU/scatter), "public"
    (grouped_matmul + torch glue) or "loop" (torch loop; also used whenever autograd needs it).
    """

    IMPLS = ("fused", "public", "loop")

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
        if self.impl == "public":
            return experts_forward_public(z, p, self.w_gate_up, self.w_down)
        return experts_forward_fused(z, p, self.w_gate_up, self.w_down)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.d_model:
            raise InputError(f"x must have shape [..., {self.d_model}], got {list(x.shape)}")
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.d_model)
        T = x2.shape[0]
        z, weights, experts = self.route(x2)
        needs_grad = torch.is_grad_enabled() and (
            x.requires_grad or any(p.requires_grad for p in (self.w_in, self.w_gate_up, self.w_down, self.w_router))
        )
        if self.impl == "loop" or needs_grad:
            y = experts_forward_loop(z, weights, experts, self.w_gate_up, self.w_down)
        else:
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
    "experts_forward_fused",
    "experts_forward_loop",
    "experts_forward_public",
    "experts_forward_torch",
    "plan",
    "route_heads",
]
