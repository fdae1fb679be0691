"""A Mixture-of-Experts FFN layer (forward) on the persistent grouped GEMM.

    router_logits [T, E] --top-k--> (expert, weight) for each of the T x k token slots
    sort the slots by expert                     -> offsets [E] (cumulative row ends)
    h = silu(x[tok] @ Wg[e]) * (x[tok] @ Wu[e])  one grouped GEMM; the gather of x rows is in
                                                 its loads, SiLU * mul in its epilogue
    y[slot] = weight * (h @ Wd[e])               one grouped GEMM; the routing weight and the
                                                 scatter back to token-slot order in its epilogue
    out[t] = sum over the k slots of token t     (a [T, k, d] -> [T, d] sum)

The permuted copy of x, the [T k, 2 d_ff] gate/up activation and the unweighted down output of
an unfused layer are never written. Nothing syncs with the host.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import torch

from tilewise.errors import InputError
from tilewise.kernels.grouped_gemm import GroupedConfig, choose_config, launch
from tilewise.kernels.utils import PlanCache, long_kernel, signature

GATES = ("softmax", "sigmoid")


# ----------------------------------------------------------------------------- helpers


def route(router_logits: torch.Tensor, top_k: int, gate: str = "softmax", normalize: bool = True) -> Any:
    """Top-k routing: (weights fp32 [T, k], experts int64 [T, k]).

    softmax: softmax over all E experts, keep the top k (normalize: divide by their sum, which
        equals a softmax over the k kept logits; Qwen3-MoE's norm_topk_prob).
    sigmoid: sigmoid of each logit, keep the top k (normalize: divide by their sum, as
        DeepSeek-V3 does; its group-limited selection and bias are not modelled).
    Both gates are monotonic, so the top k of the logits are the top k of the scores: the
    [T, E] scores are never formed.
    """
    logits = router_logits.float()
    top, experts = torch.topk(logits, top_k, dim=-1)
    if gate == "softmax":
        weights = (
            torch.softmax(top, dim=-1) if normalize else torch.exp(top - torch.logsumexp(logits, -1, keepdim=True))
        )
    else:
        weights = torch.sigmoid(top)
        if normalize:
            weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights, experts


def permute(experts: torch.Tensor, num_experts: int) -> Any:
    """Slots sorted by expert: (order int64 [T k]: slot of each permuted row, offsets int32 [E]).

    No host sync (torch.bincount would read the maximum back to size its output): the offsets
    are a search of the sorted expert ids. The ids are sorted as int16 (int32 past 32767
    experts): a radix sort of 16-bit keys makes 2 passes instead of the 8 of int64.
    """
    flat = experts.reshape(-1)
    key = torch.int16 if num_experts <= 32767 else torch.int32
    sorted_ids, order = torch.sort(flat.to(key), stable=True)
    # the cached ids are real tensors: a trace (fake or functional tensors) builds its own
    real = type(flat) is torch.Tensor and not torch.compiler.is_compiling()
    ids = _expert_ids(num_experts, key, flat.device) if real else None
    if ids is None:
        ids = torch.arange(num_experts, dtype=key, device=flat.device)
    offsets = torch.searchsorted(sorted_ids, ids, right=True, out_int32=True)
    return order, offsets


@functools.lru_cache(maxsize=64)
def _expert_ids(num_experts: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.arange(num_experts, dtype=dtype, device=device)


def _check_moe(x: Any, router_logits: Any, w_gate_up: Any, w_down: Any, top_k: int, gate: Any) -> None:
    for name, t in (("x", x), ("router_logits", router_logits), ("w_gate_up", w_gate_up), ("w_down", w_down)):
        if not isinstance(t, torch.Tensor):
            raise InputError(f"{name} must be a torch tensor, got {type(t).__name__}")
    if x.dim() != 2:
        raise InputError(f"x must have shape [tokens, d_model], got {list(x.shape)}")
    T, d = x.shape
    if w_gate_up.dim() != 3 or w_gate_up.shape[1] != d or w_gate_up.shape[2] % 2:
        raise InputError(
            f"w_gate_up must have shape [experts, {d}, 2 * d_ff] (gate | up along the last dim), "
            f"got {list(w_gate_up.shape)}"
        )
    E, _, f2 = w_gate_up.shape
    if w_down.dim() != 3 or tuple(w_down.shape) != (E, f2 // 2, d):
        raise InputError(
            f"w_down must have shape [{E}, {f2 // 2}, {d}] (experts, d_ff, d_model), got {list(w_down.shape)}"
        )
    if router_logits.dim() != 2 or tuple(router_logits.shape) != (T, E):
        raise InputError(f"router_logits must have shape [{T}, {E}] (tokens, experts), got {list(router_logits.shape)}")
    if not router_logits.is_floating_point():
        raise InputError(f"router_logits must be a floating-point tensor, got {router_logits.dtype}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise InputError(f"x must be float16, bfloat16 or float32, got {x.dtype}")
    if w_gate_up.dtype != x.dtype:
        raise InputError(f"w_gate_up must have the dtype of x ({x.dtype}), got {w_gate_up.dtype}")
    if w_down.dtype != x.dtype:
        raise InputError(f"w_down must have the dtype of x ({x.dtype}), got {w_down.dtype}")
    if w_down.device != x.device or router_logits.device != x.device or w_gate_up.device != x.device:
        raise InputError(
            f"x, router_logits, w_gate_up and w_down must be on one device, got {x.device}, "
            f"{router_logits.device}, {w_gate_up.device}, {w_down.device}"
        )
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not (1 <= top_k <= E):
        raise InputError(f"top_k must be an integer in [1, {E}] (the number of experts), got {top_k!r}")
    if gate not in GATES:
        raise InputError(f"gate must be one of {list(GATES)}, got {gate!r}")


# ------------------------------------------------------------------------ config choice


def moe_configs(
    tokens: int, top_k: int, experts: int, d_model: int, d_ff: int, dtype: torch.dtype, on_gpu: bool
) -> tuple[GroupedConfig, GroupedConfig]:
    """Tiles for the gate/up GEMM (N = d_ff, a gate and an up tile per step) and the down GEMM (N = d_model).

    The grouped GEMM's tiles for the rows per expert, with the "inline" schedule: the prefix sum
    is computed inside each GEMM, so the layer launches two Triton kernels instead of four.
    H200 (2026-11-30, final sweep, us): Qwen3-like T 512 (CPU-bound) 415 inline vs 421 map;
    but the map was faster on the GPU-bound layers (Qwen3-like T 4096 871 vs 898, DeepSeek-like
    T 4096 8629 vs 9413, T 512 5377 vs 5458): a candidate for the next default.
    """
    rows = tokens * top_k / experts
    up = choose_config(rows, d_ff, d_model, dtype, on_gpu, glu=True)
    down = choose_config(rows, d_model, d_ff, dtype, on_gpu)
    return dataclasses.replace(up, schedule="inline"), dataclasses.replace(down, schedule="inline")


def default_configs(x: Any, w_gate_up: Any, top_k: int) -> tuple[GroupedConfig, GroupedConfig]:
    """`moe_configs` for x [T, d] (MH-MoE: z [T H, d_h]), without TMA descriptors where the GEMMs are too short
    to hide their host cost (utils.long_kernel)."""
    T, d = x.shape
    E, _, f2 = w_gate_up.shape
    f = f2 // 2
    up, down = moe_configs(T, top_k, E, d, f, x.dtype, x.is_cuda)
    rows, e = T * top_k, x.element_size()
    if up.tma and not long_kernel(x.device, 2.0 * rows * d * f2, (E * d * f2 + rows * (d + f)) * e, x.dtype):
        up = dataclasses.replace(up, tma=False)
    if down.tma and not long_kernel(x.device, 2.0 * rows * f * d, (E * f * d + rows * (f + d)) * e, x.dtype):
        down = dataclasses.replace(down, tma=False)
    return up, down


# Checked configs by call signature (the checks and the tile choice run once per signature).
_PLANS = PlanCache()


# ------------------------------------------------------------------------------ public op


def moe(
    x: torch.Tensor,
    router_logits: torch.Tensor,
    w_gate_up: torch.Tensor,
    w_down: torch.Tensor,
    top_k: int,
    *,
    gate: str = "softmax",
    normalize: bool = True,
    configs: tuple[GroupedConfig, GroupedConfig] | None = None,
) -> torch.Tensor:
    """MoE FFN forward: sum over the top-k experts e of token t of weight * (silu(x Wg_e) * (x Wu_e)) Wd_e.

    x: [T, d] float16 / bfloat16 / float32.
    router_logits: [T, E], any float dtype (routing is computed in float32).
    w_gate_up: [E, d, 2 d_ff], gate columns first, then up columns; the dtype of x.
    w_down: [E, d_ff, d]; the dtype of x.
    top_k: experts per token, 1 <= top_k <= E.
    gate: "softmax" or "sigmoid" (see `route`); normalize: divide the k weights by their sum.
    Returns [T, d] in the dtype of x.
    """
    key: tuple[Any, ...] | None
    try:
        key = (
            signature(x),
            signature(router_logits),
            signature(w_gate_up),
            signature(w_down),
            top_k,
            type(top_k),
            gate,
            normalize,
            configs,
        )
        plan = _PLANS.get(key)
    except (AttributeError, TypeError):  # not tensors, or an unhashable option: the checks refuse it
        key, plan = None, None
    if plan is None:
        _check_moe(x, router_logits, w_gate_up, w_down, top_k, gate)
        plan = configs or default_configs(x, w_gate_up, top_k)
        if key is not None:
            _PLANS.put(key, plan)
    T, d = x.shape
    E, _, f2 = w_gate_up.shape
    f = f2 // 2
    out_dtype = x.dtype
    if T == 0:
        return torch.zeros((0, d), dtype=out_dtype, device=x.device)
    weights, experts = route(router_logits, top_k, gate, normalize)
    order, offsets = permute(experts, E)
    rows = T * top_k
    cfg_up, cfg_down = plan
    h = torch.empty((rows, f), dtype=out_dtype, device=x.device)  # permuted (expert) order
    # permuted row r is token slot order[r] = t * k + j: it reads x row order[r] // k
    launch(x, w_gate_up, offsets, h, f, cfg_up, rows=rows, glu=True, gather=order, gather_div=top_k)
    y = torch.empty((rows, d), dtype=out_dtype, device=x.device)  # token-slot order
    # and is written to y row order[r], scaled by the routing weight of that slot
    launch(h, w_down, offsets, y, d, cfg_down, rows=rows, scatter=order, scale=weights.reshape(-1))
    if top_k == 1:
        return y
    return y.view(T, top_k, d).sum(dim=1)


def moe_reference(
    x: Any,
    router_logits: Any,
    w_gate_up: Any,
    w_down: Any,
    top_k: int,
    *,
    gate: str = "softmax",
    normalize: bool = True,
    dtype: Any = torch.float64,
) -> Any:
    """The specification: a plain loop over experts in `dtype` (float64 in the tests)."""
    weights, experts = route(router_logits, top_k, gate, normalize)
    f = w_gate_up.shape[2] // 2
    xd = x.to(dtype)
    out = torch.zeros(x.shape, dtype=dtype, device=x.device)
    for e in range(w_gate_up.shape[0]):
        tok, slot = torch.nonzero(experts == e, as_tuple=True)
        if tok.numel() == 0:
            continue
        g = xd[tok] @ w_gate_up[e, :, :f].to(dtype)
        u = xd[tok] @ w_gate_up[e, :, f:].to(dtype)
        y = (torch.nn.functional.silu(g) * u) @ w_down[e].to(dtype)
        out.index_add_(0, tok, y * weights[tok, slot].to(dtype)[:, None])
    return out


__all__ = ["default_configs", "moe", "moe_configs", "moe_reference", "permute", "route"]

check_moe = _check_moe  # public: tilewise.kernels.custom_ops runs it in the fake impls
