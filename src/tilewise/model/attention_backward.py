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
from tilewise.errors import InputError
from tilewise.model import traffic
from tilewise.model.predict import Prediction, machine
from tilewise.util import cdiv

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


# The backward's Tensor-Core efficiency relative to the forward's calibrated median (`attention_mma_eff_median`
# of the GPU's calibration file): the dK/dV loop runs five dependent GEMMs per step with two of them fed from
# registers (P^T, dS^T) and an atomic add behind them, where the forward runs two. BACKWARD_MMA_SCALE is the one
# figure the calibration scheme has no microbenchmark for; `fit_mma_scale` fits it to the committed rows
# (benchmarks/results/h200/attention_backward.json, 12 backward problems x 2 peers, H200 bf16, CUDA graphs):
# 0.654, after which the model's error is 15% at the median and 53% at worst (B4 H32 S1024 D64 causal and B2 H16
# S4096 D256 causal run ~2x the prediction: the model has no term for the masked diagonal blocks of short causal
# problems nor for d = 256's half-width key block). tests/test_model_attention_backward.py refits it from the rows.
BACKWARD_MMA_SCALE = 0.654
PREPROCESS_LAUNCHES = {"atomic": 4, "separate": 3}  # D, zero dQ, dK/dV (+ dQ cast) | D, dK/dV, dQ


def predict(
    problem: dict[str, Any], config: dict[str, Any], gpu: str = "h200", mma_scale: float | None = None
) -> Prediction:
    """Predicted time of the backward (all its launches) for `problem` (the forward's keys: batch, heads, kv_heads,
    seq_q, seq_k, head_dim, causal, dtype) and `config` (block_m, block_n, num_warps, num_stages, dq):

        ms = launches + max(tensor_core, hbm, l2)

    tensor_core: every program's padded tile FLOPs (GEMMS[dq] x 2 d per pair) at the Tensor-Core peak times the
    forward's calibrated MMA efficiency times BACKWARD_MMA_SCALE, spread over the SMs; hbm: `hbm_bytes` at the
    measured read bandwidth; l2: Q and dO re-read by every key block (and K, V by every query block of the separate
    dQ kernel) plus the atomic dQ traffic (read and write) at the L2 bandwidth.
    """
    B, H = int(problem["batch"]), int(problem["heads"])
    Hk = int(problem.get("kv_heads") or H)
    sq = int(problem["seq_q"])
    sk = int(problem.get("seq_k") or sq)
    d = int(problem["head_dim"])
    causal = bool(problem.get("causal", False))
    dt = problem.get("dtype", "bf16")
    bm, bn, dq = int(config["block_m"]), int(config["block_n"]), config.get("dq", "atomic")
    if dq not in GEMMS:
        raise InputError(f"dq must be one of {', '.join(GEMMS)}, got {dq!r}")
    mach = machine(_gpus.get(gpu).key)
    e = _gpus.element_bytes(dt)
    consts = mach.cal.get("constants", {})
    scale = BACKWARD_MMA_SCALE if mma_scale is None else mma_scale
    mma = float(consts.get("attention_mma_eff_median", 0.5)) * scale
    # padded work: each key block meets the query blocks that see it (causal: about half, plus the diagonal block)
    pairs_pad = cdiv(sq, bm) * bm * cdiv(sk, bn) * bn
    if causal:
        pairs_pad = traffic.causal_pairs(sq, sk) + cdiv(sk, bn) * bm * bn
    work = GEMMS[dq] * 2 * d * pairs_pad * B * H
    t_tc = work / (mach.peak_flops * mma)
    t_hbm = hbm_bytes(B, H, Hk, sq, sk, d, dt, dq) / mach.read_bps
    seen = pairs_pad / max(1, bn)  # query rows times key blocks
    l2 = 2 * seen * d * e * B * H  # Q and dO per key block
    if dq == "atomic":
        l2 += 2 * atomic_bytes(B, H, sq, sk, d, bn, causal)
    else:
        l2 += 2 * (pairs_pad / max(1, bm)) * d * e * B * H  # K and V per query block of the dQ kernel
    t_l2 = l2 / mach.l2_bps
    main = {"tensor_core": t_tc, "hbm": t_hbm, "l2": t_l2}
    body = max(main.values())
    launch = PREPROCESS_LAUNCHES[dq] * mach.launch_s
    binding = max(main, key=lambda k: main[k])
    terms = {k: v * 1e3 for k, v in {**main, "launch": launch}.items()}
    detail = {"flops": work, "useful_flops": useful_flops(B, H, sq, sk, d, causal), "mma_eff": mma,
              "l2_bytes": l2, "programs": cdiv(sk, bn) * B * Hk}  # fmt: skip
    return Prediction("attention_backward", (body + launch) * 1e3, terms, binding, mach.key, mach.calibrated, detail)


def space(head_dim: int, dtype: str = "bf16", gpu: str = "h200") -> list[dict[str, Any]]:
    """The dK/dV tiles the kernel can launch on `gpu`: every block_m x block_n x warps x stages whose registers and
    shared memory fit (`tile_budget`), in both dQ modes."""
    out: list[dict[str, Any]] = []
    for bn in (32, 64, 128):
        for bm in (16, 32, 64, 128):
            for w in (4, 8):
                for st in (1, 2, 3):
                    b = tile_budget(head_dim, bm, bn, w, st, dtype, gpu)
                    if b["registers"]["fits"] and b["smem"]["fits"] and bm * bn >= 16 * 32 * w:
                        out.extend(
                            {"block_m": bm, "block_n": bn, "num_warps": w, "num_stages": st, "dq": dq} for dq in GEMMS
                        )
    return out


def rank(problem: dict[str, Any], gpu: str = "h200", top_k: int = 5) -> list[tuple[dict[str, Any], Prediction]]:
    """The space ranked by `predict`: [(config, Prediction)], fastest first."""
    scored = [(c, predict(problem, c, gpu)) for c in space(int(problem["head_dim"]), problem.get("dtype", "bf16"), gpu)]
    if not scored:
        raise InputError(f"no backward tile of head_dim {problem['head_dim']} fits {gpu}")
    scored.sort(key=lambda cp: cp[1].ms)
    return scored[: max(1, int(top_k))]


def fit_mma_scale(rows: list[dict[str, Any]], gpu: str = "h200") -> dict[str, float]:
    """BACKWARD_MMA_SCALE from measured rows (kernel "attention_backward", the tile and dq they ran): the scale
    that makes the median predicted / measured ratio 1, and the model's median and worst error after it."""
    import statistics

    ratios = []
    for r in rows:
        if r.get("kernel") != "attention_backward" or not r.get("ours_graph_ms"):
            continue
        p = problem_of(r["shape"])
        bm, bn, w, st = r["tile"]
        c = {"block_m": bm, "block_n": bn, "num_warps": w, "num_stages": st, "dq": r.get("dq", "atomic")}
        ratios.append((p, c, r["ours_graph_ms"]))
    if not ratios:
        raise InputError("fit_mma_scale needs attention_backward rows with ours_graph_ms")
    base = [predict(p, c, gpu, mma_scale=1.0).terms["tensor_core"] / ms for p, c, ms in ratios]
    scale = statistics.median(base)
    errs = [abs(predict(p, c, gpu, mma_scale=scale).ms / ms - 1) for p, c, ms in ratios]
    return {"scale": scale, "error_median": statistics.median(errs), "error_max": max(errs), "rows": len(errs)}


def problem_of(shape: str) -> dict[str, Any]:
    """'B4 H32/8 S4096 D128 causal' (tilewise.bench.shapes.attention_name) back to a problem dict."""
    import re

    m = re.match(r"B(\d+) H(\d+)(?:/(\d+))? S(\d+) D(\d+) (causal|non-causal)", shape)
    if m is None:
        raise InputError(f"shape must read like 'B4 H32/8 S4096 D128 causal', got {shape!r}")
    b, h, hk, s, d, c = m.groups()
    return {"batch": int(b), "heads": int(h), "kv_heads": int(hk or h), "seq_q": int(s), "seq_k": int(s),
            "head_dim": int(d), "causal": c == "causal", "dtype": "bf16"}  # fmt: skip


__all__ = [
    "BACKWARD_MMA_SCALE", "GEMMS", "atomic_bytes", "fit_mma_scale", "flops", "hbm_bytes", "predict", "problem_of",
    "rank", "space", "tile_budget", "useful_flops",
]  # fmt: skip
