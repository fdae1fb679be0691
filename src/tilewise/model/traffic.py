"""FLOPs and bytes of each operation tilewise knows: the one place these counts live.

Every benchmark row (TFLOP/s, TB/s), every roofline prediction, the explain reports and
the explorer call these functions; nothing else multiplies shapes into FLOPs or bytes.
"Bytes" here is the fewest bytes an operation must move through device memory: each
input read once and each output written once.
"""

from __future__ import annotations

from collections.abc import Sequence

from tilewise.errors import InputError, counts, shown
from tilewise.gpus import element_bytes
from tilewise.util import cdiv

# --------------------------------------------------------------------------- GEMM


@counts
def gemm_flops(m: int, n: int, k: int) -> int:
    """C[m, n] = A[m, k] @ B[k, n]: one multiply-add (2 FLOPs) per (i, j, l)."""
    return 2 * m * n * k


@counts
def gemm_bytes(m: int, n: int, k: int, dtype: str = "bf16", out_dtype: str | None = None) -> int:
    """A and B read once, C written once."""
    e = element_bytes(dtype)
    eo = element_bytes(out_dtype or dtype)
    return (m * k + k * n) * e + m * n * eo


@counts
def gemm_naive_hbm_elements(m: int, n: int, k: int) -> int:
    """One thread per C[i][j], no reuse: each thread reads a row of A and a column of B.

    Without tiles each element of A is read N times and each of B M times.
    """
    return (m * n * k) * 2 + m * n


@counts
def gemm_naive_hbm_bytes(m: int, n: int, k: int, dtype: str = "bf16") -> int:
    """`gemm_naive_hbm_elements` in bytes."""
    return gemm_naive_hbm_elements(m, n, k) * element_bytes(dtype)


@counts
def gemm_tiled_hbm_elements(m: int, n: int, k: int, block_m: int, block_n: int) -> int:
    """Output-stationary tiling without cache reuse between tiles.

    Each of the ceil(n / block_n) column tiles reads all of A once, each of the
    ceil(m / block_m) row tiles reads all of B once; C is written once. With square tiles
    of side TS this is the naive traffic divided by TS.
    """
    return m * k * cdiv(n, block_n) + k * n * cdiv(m, block_m) + m * n


@counts
def gemm_tiled_hbm_bytes(m: int, n: int, k: int, block_m: int, block_n: int, dtype: str = "bf16") -> int:
    """`gemm_tiled_hbm_elements` in bytes."""
    return gemm_tiled_hbm_elements(m, n, k, block_m, block_n) * element_bytes(dtype)


# ---------------------------------------------------------------------- reduction


@counts
def sum_flops(numel: int) -> int:
    return max(numel - 1, 0)


@counts
def sum_bytes(numel: int, dtype: str = "fp32", outputs: int = 1) -> int:
    return numel * element_bytes(dtype) + outputs * element_bytes(dtype)


# ---------------------------------------------------------------------- attention


@counts
def causal_pairs(sq: int, sk: int) -> int:
    """Unmasked (query, key) pairs under a causal mask aligned at the bottom right.

    Query i (0-based, of sq) sees keys 0 .. i + (sk - sq). For sq == sk this is
    sq (sq + 1) / 2, about half of sq * sk.
    """
    c = sk - sq + 1  # query i sees i + c keys before clipping to [0, sk]
    i0 = min(max(1 - c, 0), sq)  # first query that sees any key
    i1 = min(max(sk - c, i0), sq)  # first query that sees all sk keys
    n = i1 - i0
    return n * c + (i0 + i1 - 1) * n // 2 + (sq - i1) * sk


@counts
def attention_flops(
    batch: int, heads: int, sq: int, sk: int, head_dim: int, causal: bool = False, exact_causal: bool = True
) -> int:
    """Forward FLOPs: S = Q K^T and O = P V, 2 x 2 x d per (query, key) pair.

    With `causal`, only unmasked pairs count (`exact_causal`), or half of sq x sk
    (the convention most benchmarks, SDPA's included, use) when `exact_causal` is False.
    """
    if causal:
        pairs = causal_pairs(sq, sk) if exact_causal else (sq * sk) // 2
    else:
        pairs = sq * sk
    return 4 * batch * heads * pairs * head_dim


@counts
def attention_bytes(
    batch: int, heads: int, kv_heads: int, sq: int, sk: int, head_dim: int, dtype: str = "bf16", lse: bool = True
) -> int:
    """Q, K, V read once, O written once (and the fp32 log-sum-exp, one per query row)."""
    e = element_bytes(dtype)
    q = batch * heads * sq * head_dim
    kv = 2 * batch * kv_heads * sk * head_dim
    o = q
    return (q + kv + o) * e + (batch * heads * sq * 4 if lse else 0)


@counts
def attention_tile_flops(block_m: int, block_n: int, head_dim: int) -> int:
    """One (query-row block, K/V tile) step: S = Q K^T and O += P V, 2 x 2 x d per pair."""
    return 4 * block_m * block_n * head_dim


@counts
def kv_tile_bytes(block_n: int, head_dim: int, dtype: str = "bf16") -> int:
    """One K tile and one V tile, each [block_n, head_dim]."""
    return 2 * block_n * head_dim * element_bytes(dtype)


@counts
def split_kv_merge_bytes(splits: int, batch: int, heads: int, head_dim: int) -> int:
    """Split-KV's second pass: each split writes and the merge reads a partial output (fp32)
    and its log-sum-exp per (sequence, query head). Nothing to merge with one split."""
    if splits <= 1:
        return 0
    return 2 * splits * batch * heads * (head_dim + 1) * 4


@counts
def decode_flops(seq_lens: Sequence[int], heads: int, head_dim: int) -> int:
    """One new query per sequence: 4 x d FLOPs per (query head, cached key)."""
    return 4 * heads * head_dim * sum(int(x) for x in seq_lens)


@counts
def kv_cache_bytes(seq_lens: Sequence[int], kv_heads: int, head_dim: int, dtype: str = "bf16") -> int:
    """The K and V cache of every sequence: 2 x kv_heads x (sum of lengths) x head_dim elements."""
    return 2 * kv_heads * sum(int(x) for x in seq_lens) * head_dim * element_bytes(dtype)


@counts
def decode_bytes(seq_lens: Sequence[int], heads: int, kv_heads: int, head_dim: int, dtype: str = "bf16") -> int:
    """The K/V cache of each sequence read once per KV head, plus q and o."""
    qo = 2 * len(seq_lens) * heads * head_dim
    return kv_cache_bytes(seq_lens, kv_heads, head_dim, dtype) + qo * element_bytes(dtype)


# --------------------------------------------------------------------- grouped GEMM / MoE


@counts
def grouped_gemm_flops(rows_per_expert: Sequence[int], k: int, n: int) -> int:
    return 2 * sum(int(r) for r in rows_per_expert) * k * n


@counts
def grouped_gemm_bytes(rows_per_expert: Sequence[int], k: int, n: int, dtype: str = "bf16") -> int:
    """x read once, the weights of every expert that has rows read once, y written once."""
    e = element_bytes(dtype)
    rows = [int(r) for r in rows_per_expert]
    t = sum(rows)
    used = sum(1 for r in rows if r > 0)
    return (t * k + used * k * n + t * n) * e


@counts
def moe_layer_flops(tokens: int, top_k: int, d_model: int, d_ff: int) -> int:
    """Gate/up ([d, 2 d_ff]) and down ([d_ff, d]) GEMMs for tokens x top_k rows."""
    rows = tokens * top_k
    return 2 * rows * d_model * (2 * d_ff) + 2 * rows * d_ff * d_model


@counts
def moe_layer_bytes(tokens: int, top_k: int, d_model: int, d_ff: int, experts_used: int, dtype: str = "bf16") -> int:
    """Weights of the used experts read once, x read and y written once (intermediates excluded)."""
    e = element_bytes(dtype)
    weights = experts_used * (d_model * 2 * d_ff + d_ff * d_model)
    return (weights + 2 * tokens * d_model) * e


# --------------------------------------------------------------------- multi-head FFN


@counts
def mhffn_flops(tokens: int, heads: int, head_dim: int, intermediate: int) -> int:
    """Per head: z_h Wg_h, z_h Wu_h ([d_h, I] each) and (silu * up) Wd_h ([I, d_h])."""
    return 3 * 2 * tokens * heads * head_dim * intermediate


@counts
def mhffn_bytes(tokens: int, heads: int, head_dim: int, intermediate: int, dtype: str = "bf16") -> int:
    """Fused kernel: z read once, the three weights read once, y written once."""
    e = element_bytes(dtype)
    act = 2 * tokens * heads * head_dim
    w = 3 * heads * head_dim * intermediate
    return (act + w) * e


@counts
def mhffn_unfused_bytes(tokens: int, heads: int, head_dim: int, intermediate: int, dtype: str = "bf16") -> int:
    """Unfused layer: the [T, H, I] gate and up activations are written and read back."""
    e = element_bytes(dtype)
    inter = tokens * heads * intermediate
    # gate, up written; both read for silu*mul; product written; product read by the down GEMM
    return mhffn_bytes(tokens, heads, head_dim, intermediate, dtype) + 6 * inter * e


# -------------------------------------------------------------- FlashFFN backward, dense SwiGLU

BACKWARD_MODES = ("useful", "split", "atomic")


@counts
def mhffn_backward_flops(tokens: int, heads: int, head_dim: int, intermediate: int, mode: str = "useful") -> int:
    """Backward FLOPs of the per-head SwiGLU FFN, in units of one per-head GEMM U = 2 T H d_h I.

    * "useful": what autograd of the unfused layer computes: dWd, da, dz (2), dWg, dWu = 6 U;
    * "split": FlashFFN's two-kernel backward: dW kernel (recompute g, u, da; dWd, dWg, dWu = 6 U)
      plus dz kernel (recompute g, u, da; dz = dg Wg^T + du Wu^T = 5 U) = 11 U;
    * "atomic": one kernel (recompute g, u, da; three dW; dz with fp32 atomics) = 8 U.
    """
    u = 2 * tokens * heads * head_dim * intermediate
    units = {"useful": 6, "split": 11, "atomic": 8}
    if mode not in units:
        raise InputError(f"mode must be one of {sorted(units)}, got {shown(mode)}")
    return units[mode] * u


@counts
def mhffn_backward_bytes(tokens: int, heads: int, head_dim: int, intermediate: int, dtype: str = "bf16") -> int:
    """Fused backward: z and dy read, the three weights read, dz and the three weight gradients written."""
    e = element_bytes(dtype)
    act = 3 * tokens * heads * head_dim
    w = 6 * heads * head_dim * intermediate
    return (act + w) * e


@counts
def mhffn_unfused_backward_bytes(tokens: int, heads: int, head_dim: int, intermediate: int, dtype: str = "bf16") -> int:
    """Unfused backward: the fused bytes plus the [T, H, I] tensors autograd reads and writes.

    Read a (for dWd), write da; read da, g, u; write dg, du; read dg, du (dz GEMM) and again
    (dWg, dWu GEMMs): 10 passes over a [T, H, I] tensor.
    """
    inter = tokens * heads * intermediate * element_bytes(dtype)
    return mhffn_backward_bytes(tokens, heads, head_dim, intermediate, dtype) + 10 * inter


@counts
def mhffn_unfused_saved_bytes(tokens: int, heads: int, intermediate: int, dtype: str = "bf16") -> int:
    """[T, H, I] tensors autograd keeps for the backward of bmm / silu / mul / bmm: g, u, silu(g), a = 4."""
    return 4 * tokens * heads * intermediate * element_bytes(dtype)


@counts
def dense_swiglu_flops(tokens: int, d_model: int, intermediate: int) -> int:
    """Dense SwiGLU x [T, d] -> [T, I] gate and up -> [T, d]: 3 GEMMs of 2 T d I."""
    return 3 * gemm_flops(tokens, intermediate, d_model)


@counts
def gemm_tile_flops(block_m: int, block_n: int, k: int) -> int:
    """One output tile of a GEMM walked over all of K."""
    return gemm_flops(block_m, block_n, k)


@counts
def gemm_tile_bytes(block_m: int, block_n: int, k: int, dtype: str = "bf16") -> int:
    """The A [block_m, k] and B [k, block_n] slices one output tile reads."""
    return (block_m * k + k * block_n) * element_bytes(dtype)


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("Sequence", "InputError", "annotations")]
