"""The torch.nn layers built on the registered ops: `MultiHeadFFN` (FlashFFN) and `MultiHeadMoE` (MH-MoE).

They sit above the op registry (`tilewise.kernels.custom_ops`), which sits above the kernels
(`ffn`, `mhmoe`, `grouped_gemm`, ...): a layer calls the registered op, so it traces under
`torch.compile(fullgraph=True)` and trains through the op's autograd formula, and no kernel module
imports the registry.
"""

from __future__ import annotations

import math

import torch

from tilewise.errors import InputError, positive_int
from tilewise.kernels.custom_ops import flash_ffn, grouped_matmul, moe_experts
from tilewise.kernels.ffn import HEAD_DIMS, mhffn_unfused
from tilewise.kernels.mhmoe import Plan, plan, route_heads
from tilewise.kernels.moe_layer import permute

# ------------------------------------------------------------------------------ helpers


def _init_by_fan_in(*weights: tuple[torch.nn.Parameter, int]) -> None:
    """Each weight drawn from N(0, 1 / fan_in), so a product with unit-variance inputs has unit variance."""
    with torch.no_grad():
        for w, fan_in in weights:
            w.normal_(0.0, 1.0 / math.sqrt(fan_in))


# ------------------------------------------------------------------------------ FlashFFN


class MultiHeadFFN(torch.nn.Module):  # type: ignore[misc]  # torch is read as Any (unchecked)
    """x [..., d_model] -> W_in -> heads x FlashFFN -> W_out -> [..., d_model].

    Parameters: w_in [d_model, H d_h], w_gate / w_up [H, d_h, I], w_down [H, I, d_h],
    w_out [H d_h, d_model]. `fused=False` runs the same parameters through `mhffn_unfused`.
    """

    def __init__(
        self,
        d_model: int,
        heads: int,
        head_dim: int,
        intermediate: int,
        *,
        fused: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.d_model = positive_int("d_model", d_model)
        self.heads = positive_int("heads", heads)
        self.head_dim = positive_int("head_dim", head_dim)
        self.intermediate = positive_int("intermediate", intermediate)
        if self.head_dim not in HEAD_DIMS:
            raise InputError(f"head_dim must be one of {list(HEAD_DIMS)}, got {head_dim}")
        self.fused = fused
        kw = dict(device=device, dtype=dtype)
        hd = self.heads * self.head_dim
        self.w_in = torch.nn.Parameter(torch.empty(self.d_model, hd, **kw))
        self.w_gate = torch.nn.Parameter(torch.empty(self.heads, self.head_dim, self.intermediate, **kw))
        self.w_up = torch.nn.Parameter(torch.empty(self.heads, self.head_dim, self.intermediate, **kw))
        self.w_down = torch.nn.Parameter(torch.empty(self.heads, self.intermediate, self.head_dim, **kw))
        self.w_out = torch.nn.Parameter(torch.empty(hd, self.d_model, **kw))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _init_by_fan_in(
            (self.w_in, self.d_model),
            (self.w_gate, self.head_dim),
            (self.w_up, self.head_dim),
            (self.w_down, self.intermediate),
            (self.w_out, self.heads * self.head_dim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.d_model:
            raise InputError(f"x must have shape [..., {self.d_model}], got {list(x.shape)}")
        lead = x.shape[:-1]
        z = (x.reshape(-1, self.d_model) @ self.w_in).view(-1, self.heads, self.head_dim)  # [T, H, d_h]
        ffn = flash_ffn if self.fused else mhffn_unfused  # flash_ffn: torch.ops.tilewise.flash_ffn when traced
        y = ffn(z, self.w_gate, self.w_up, self.w_down)  # [T, H, d_h]
        return (y.reshape(-1, self.heads * self.head_dim) @ self.w_out).view(*lead, self.d_model)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, heads={self.heads}, head_dim={self.head_dim}, "
            f"intermediate={self.intermediate}, fused={self.fused}"
        )


# ------------------------------------------------------------------------------ MH-MoE


def experts_forward_public(z: torch.Tensor, p: Plan, w_gate_up: torch.Tensor, w_down: torch.Tensor) -> torch.Tensor:
    """The same on the public `grouped_matmul` only: gather, GLU, scale and scatter in torch
    (differentiable through grouped_matmul's own autograd formula)."""
    R, d = z.shape
    f = w_down.shape[1]
    xs = z[p.token_of.long()]  # [R k, d_h] expert order
    gu = grouped_matmul(xs, w_gate_up, p.offsets, check_offsets=False)
    a = torch.nn.functional.silu(gu[:, :f]) * gu[:, f:]
    ys = grouped_matmul(a.contiguous(), w_down, p.offsets, check_offsets=False) * p.scale[:, None].to(z.dtype)
    y = torch.zeros((R * p.top_k, d), dtype=z.dtype, device=z.device).index_copy(0, p.slot_of.long(), ys)
    return y.view(R, p.top_k, d).sum(dim=1)


class MultiHeadMoE(torch.nn.Module):  # type: ignore[misc]  # torch is read as Any (unchecked)
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
        _init_by_fan_in(
            (self.w_in, self.d_model),
            (self.w_router, self.head_dim),
            (self.w_gate_up, self.head_dim),
            (self.w_down, self.expert_width),
            (self.w_out, self.heads * self.head_dim),
        )

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
        return moe_experts(z, p.slot_weights.view(p.rows, p.top_k), p.slot_of, p.offsets, self.w_gate_up, self.w_down)

    def experts(self, z: torch.Tensor, weights: torch.Tensor, experts: torch.Tensor) -> torch.Tensor:
        """The expert stage of `forward`: z [T H, d_h] and the routing decisions -> [T H, d_h].

        The fused path sorts the slots (3 launches) and hands the order itself to the grouped GEMMs;
        the rest of a `Plan` (token_of, scale: 2 more launches) is made only for the public path."""
        if self.impl == "public":
            return self.experts_forward(z, plan(weights, experts, self.num_experts))
        slot_of, offsets = permute(experts, self.num_experts)
        return moe_experts(z, weights, slot_of, offsets, self.w_gate_up, self.w_down)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.d_model:
            raise InputError(f"x must have shape [..., {self.d_model}], got {list(x.shape)}")
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.d_model)
        T = x2.shape[0]
        z, weights, experts = self.route(x2)
        y = self.experts(z.contiguous(), weights, experts)
        out = y.reshape(T, self.heads * self.head_dim) @ self.w_out
        return out.view(*lead, self.d_model)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, heads={self.heads}, head_dim={self.head_dim}, experts_per_head="
            f"{self.experts_per_head}, expert_width={self.expert_width}, top_k={self.top_k}, impl={self.impl}"
        )


__all__ = ["MultiHeadFFN", "MultiHeadMoE", "experts_forward_public"]
