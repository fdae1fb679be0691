"""The attention problem that `explain attention` walks forward and backward: its sizes, checked once for both.

Q [batch, heads, seq_q, d] against K, V [batch, kv_heads, seq_k, d]; both walks take the same checks, the same
title and hand the time model the same problem.
"""

from __future__ import annotations

from typing import Any

from tilewise import gpus as _gpus
from tilewise import validate
from tilewise.errors import require, shown


def checked_sizes(
    batch: int, heads: int, kv_heads: int | None, seq_q: int, seq_k: int | None, head_dim: int
) -> tuple[int, int, int, int, int, int]:
    """(batch, heads, kv_heads, seq_q, seq_k, d): kv_heads defaults to heads, seq_k to seq_q."""
    batch, heads = validate.size("batch", batch), validate.size("heads", heads)
    kv_heads = heads if kv_heads is None else validate.size("kv_heads", kv_heads)
    require(
        heads % kv_heads == 0,
        f"heads must be a multiple of kv_heads (GQA), got heads={heads}, kv_heads={kv_heads}",
    )
    seq_q = validate.size("seq_q", seq_q)
    seq_k = seq_q if seq_k is None else validate.size("seq_k", seq_k)
    d = validate.size("head_dim", head_dim, maximum=256)
    # d is the K of S = Q.K^T: the MMA walks it 16 at a time (16-bit types).
    validate.multiple("head_dim", d, 16, "the K of S = Q.K^T, walked 16 at a time by the MMA")
    return batch, heads, kv_heads, seq_q, seq_k, d


def walk_dtype(dtype: object) -> str:
    """The Tensor-Core dtype of `dtype`; the walks cover the 16-bit types only."""
    dt = _gpus.dtype_name(dtype)
    require(dt in ("bf16", "fp16"), f"dtype must be bf16 or fp16 for this walk, got {shown(dtype)}")
    return dt


def problem(
    batch: int, heads: int, kv_heads: int, seq_q: int, seq_k: int, d: int, causal: bool, dt: str
) -> dict[str, Any]:
    """The problem as `tilewise.model.predict` and `model.attention_backward` read it."""
    return {"batch": batch, "heads": heads, "kv_heads": kv_heads, "seq_q": seq_q, "seq_k": seq_k, "head_dim": d,
            "causal": bool(causal), "dtype": dt}  # fmt: skip


def title(direction: str, p: dict[str, Any], g: _gpus.GPU) -> str:
    """'Attention forward [4, 16 heads (16 KV), 8192 x 8192, d=128] (bf16) on NVIDIA H200' ('backward' likewise)."""
    return (
        f"Attention {direction} [{p['batch']}, {p['heads']} heads ({p['kv_heads']} KV), {p['seq_q']} x {p['seq_k']}, "
        f"d={p['head_dim']}]{' causal' if p['causal'] else ''} ({p['dtype']}) on {g.name}"
    )


__all__ = ["checked_sizes", "problem", "title", "walk_dtype"]
