"""FlashAttention's backward in the model's terms: work, bytes and the on-chip budget of one tile.

The backward of O = softmax(scale Q K^T) V, with P rebuilt from the forward's log-sum-exp (Dao,
"FlashAttention-2", arXiv:2307.08691, Algorithm 2), runs five GEMMs per (query block, key block) pair:

    S^T  = K Q^T          (the forward's Q K^T, recomputed)    P^T = exp(scale S^T - lse)
    dV  += P^T dO
    dP^T = V dO^T
    dS^T = P^T (dP^T - D),  D = rowsum(dO o O) (one fp32 per query row, a preprocessing pass)
    dK  += scale dS^T Q
    dQ  += scale dS K     (atomically in fp32, or by a second kernel that recomputes S and dP)

so 5 x 2 x d FLOPs per (query, key) pair against the forward's 2 x 2 x d: 2.5x the forward. The
deterministic dQ kernel recomputes S and dP (two more GEMMs): 7 x 2 x d, 3.5x the forward.

A dK/dV program owns one key block: K and V ([BLOCK_N, d] each) stay resident for the whole loop
over query blocks, the accumulators dK and dV ([BLOCK_N, d] fp32 each) stay in registers, and Q and
dO stream through shared memory in `stages` buffers. That is the budget `tile_budget` counts.
"""

from __future__ import annotations

from typing import Any

from tilewise import gpus as _gpus
from tilewise.model import traffic

# GEMMs per (query, key) pair, each 2 d FLOPs: S recompute, dV, dP, dK, dQ (atomic dQ) and + S, dP again
# for the separate dQ kernel (deterministic)
GEMMS = {"atomic": 5, "separate": 7}
REGISTER_LIMIT = 255  # per thread (sm_90)


def flops(batch: int, heads: int, sq: int, sk: int, head_dim: int, causal: bool = False, dq: str = "atomic") -> int:
    """FLOPs the backward executes: GEMMS[dq] x 2 d per unmasked (query, key) pair."""
    fwd = traffic.attention_flops(batch, heads, sq, sk, head_dim, causal)  # 2 GEMMs per pair
    return fwd * GEMMS[dq] // 2


def useful_flops(batch: int, heads: int, sq: int, sk: int, head_dim: int, causal: bool = False) -> int:
    """The convention of FlashAttention's and cuDNN's benchmarks: 2.5x the forward's FLOPs."""
    return flops(batch, heads, sq, sk, head_dim, causal, "atomic")


def hbm_bytes(
    batch: int, heads: int, kv_heads: int, sq: int, sk: int, head_dim: int, dtype: str = "bf16", dq: str = "atomic"
) -> int:
    """Bytes the backward must move: Q, K, V, O, dO, lse, D in; dQ, dK, dV out; the fp32 dQ buffer
    (zeroed, accumulated in L2, read back for the cast) in the atomic mode."""
    e = _gpus.element_bytes(dtype)
    q = batch * heads * sq * head_dim
    kv = batch * kv_heads * sk * head_dim
    rows = batch * heads * sq
    inputs = (q + 2 * kv + 2 * q) * e + 2 * rows * 4  # Q, K, V, O, dO; lse, D (fp32)
    outputs = (q + 2 * kv) * e
    extra = 3 * q * 4 if dq == "atomic" else 0  # fp32 dQ: zero, read back, (D written once by the preprocess)
    return inputs + outputs + extra + rows * 4


def atomic_bytes(batch: int, heads: int, sq: int, sk: int, head_dim: int, block_n: int, causal: bool = False) -> int:
    """fp32 bytes the atomic dQ adds into L2: each key block adds a [rows, d] partial for every query row it
    sees (causal: about half of them)."""
    blocks = -(-sk // block_n)
    seen = blocks if not causal else (blocks + 1) / 2
    return int(batch * heads * sq * head_dim * 4 * seen)


def tile_budget(
    head_dim: int, block_m: int, block_n: int, num_warps: int, stages: int, dtype: str = "bf16", gpu: str = "h200"
) -> dict[str, Any]:
    """Registers per thread and shared memory of one dK/dV program (see the module doc).

    registers (spread over 32 x num_warps threads): dK and dV accumulators (2 BLOCK_N d fp32), S^T and dP^T
    (2 BLOCK_N BLOCK_M fp32), and P^T, dS^T rounded to the input dtype as the A operands of the dV and dK GEMMs
    (2 BLOCK_N BLOCK_M 16-bit values, two to a register); shared memory: K and V once (the B operands' tiles,
    resident for the whole loop), `stages` copies of Q and dO.
    """
    e = _gpus.element_bytes(dtype)
    threads = 32 * num_warps
    acc = 2 * block_n * head_dim / threads
    scores = 2 * block_n * block_m / threads
    operands = 2 * block_n * block_m * e / 4 / threads
    total = acc + scores + operands + 16  # + addresses, loop counters, lse / D of the block
    smem = (2 * block_n * head_dim + stages * 2 * block_m * head_dim) * e
    limit = _gpus.get(gpu).smem_per_block_optin
    return {
        "registers": {
            "dk_dv": acc, "s_dp": scores, "p_ds": operands, "total": total, "limit": REGISTER_LIMIT,
            "fits": total <= REGISTER_LIMIT,
        },
        "smem": {"kv_bytes": 2 * block_n * head_dim * e, "q_do_stage_bytes": 2 * block_m * head_dim * e,
                 "stages": stages, "total_bytes": smem, "limit_bytes": limit, "fits": smem <= limit},
    }  # fmt: skip


__all__ = ["GEMMS", "atomic_bytes", "flops", "hbm_bytes", "tile_budget", "useful_flops"]
