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

import re
import statistics
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
    head_dim: int,
    block_m: int,
    block_n: int,
    num_warps: int,
    stages: int,
    dtype: str = "bf16",
    gpu: str = _gpus.DEFAULT_GPU,
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


# Two figures the calibration scheme has no microbenchmark for, fitted by `fit` to the committed rows
# (benchmarks/results/h200/attention_backward.json: 12 sweep problems with the atomic dQ, 10 probe rows; H200 bf16,
# CUDA graphs); tests/test_model_attention_backward.py refits both from the rows.
# * BACKWARD_MMA_SCALE: the backward's Tensor-Core efficiency relative to the forward's calibrated median
#   (`attention_mma_eff_median`): five (or seven) dependent GEMMs per step, two fed from registers (P^T, dS^T).
# * ATOMIC_TBPS: the rate at which the GPU resolves the atomic fp32 adds of dQ in L2. The large atomic-mode rows all
#   run at 0.82-1.03 TB/s of atomic traffic (`atomic_bytes` / time) whatever their head dim, mask and GQA group:
#   those adds, not the Tensor Cores, bind the atomic mode (the separate dQ kernel, 7 GEMMs and no atomics, ran
#   4.16 ms against the atomic mode's 4.94 on B1 H32 S8192 D128 causal).
# The fit (mean |predicted / measured - 1| over the 19 distinct runs): 1.18 and 0.88 TB/s; error median 7.5%, mean
# 16.5%, worst 61% (the probe's 16x64x4-warp tile at d = 256, 12.9 ms, and the short causal rows B32 H16 S512 and
# B4 H32 S1024, ~2x the prediction: the model has no term for a program's fixed cost nor for narrow tiles).
BACKWARD_MMA_SCALE = 1.18
ATOMIC_TBPS = 0.88
PREPROCESS_LAUNCHES = {"atomic": 4, "separate": 3}  # D, zero dQ, dK/dV (+ dQ cast) | D, dK/dV, dQ


def predict(
    problem: dict[str, Any],
    config: dict[str, Any],
    gpu: str = _gpus.DEFAULT_GPU,
    mma_scale: float | None = None,
    atomic_tbps: float | None = None,
) -> Prediction:
    """Predicted time of the backward (all its launches) for `problem` (the forward's keys: batch, heads, kv_heads,
    seq_q, seq_k, head_dim, causal, dtype) and `config` (block_m, block_n, num_warps, num_stages, dq):

        ms = launches + max(tensor_core, hbm, l2, atomics)

    tensor_core: every program's padded tile FLOPs (GEMMS[dq] x 2 d per pair) at the Tensor-Core peak times the
    forward's calibrated MMA efficiency times BACKWARD_MMA_SCALE, spread over the SMs; hbm: `hbm_bytes` at the
    measured read bandwidth; l2: Q and dO re-read by every key block (and K, V by every query block of the separate
    dQ kernel) at the L2 bandwidth; atomics (atomic mode): `atomic_bytes` at ATOMIC_TBPS.
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
    t_atomic = 0.0
    if dq == "atomic":
        rate = (ATOMIC_TBPS if atomic_tbps is None else atomic_tbps) * 1e12
        t_atomic = atomic_bytes(B, H, sq, sk, d, bn, causal) / rate
    else:
        l2 += 2 * (pairs_pad / max(1, bm)) * d * e * B * H  # K and V per query block of the dQ kernel
    t_l2 = l2 / mach.l2_bps
    main = {"tensor_core": t_tc, "hbm": t_hbm, "l2": t_l2, "atomics": t_atomic}
    body = max(main.values())
    launch = PREPROCESS_LAUNCHES[dq] * mach.launch_s
    binding = max(main, key=lambda k: main[k])
    terms = {k: v * 1e3 for k, v in {**main, "launch": launch}.items()}
    detail = {"flops": work, "useful_flops": useful_flops(B, H, sq, sk, d, causal), "mma_eff": mma,
              "l2_bytes": l2, "programs": cdiv(sk, bn) * B * Hk}  # fmt: skip
    return Prediction("attention_backward", (body + launch) * 1e3, terms, binding, mach.key, mach.calibrated, detail)


def space(head_dim: int, dtype: str = "bf16", gpu: str = _gpus.DEFAULT_GPU) -> list[dict[str, Any]]:
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


def rank(
    problem: dict[str, Any], gpu: str = _gpus.DEFAULT_GPU, top_k: int = 5
) -> list[tuple[dict[str, Any], Prediction]]:
    """The space ranked by `predict`: [(config, Prediction)], fastest first."""
    scored = [(c, predict(problem, c, gpu)) for c in space(int(problem["head_dim"]), problem.get("dtype", "bf16"), gpu)]
    if not scored:
        raise InputError(f"no backward tile of head_dim {problem['head_dim']} fits {gpu}")
    # ties (the Tensor Cores bind and the model has no per-tile term): less L2 traffic first, then the larger key block
    scored.sort(key=lambda cp: (round(cp[1].ms, 6), cp[1].terms["l2"], -cp[0]["block_n"], -cp[0]["block_m"]))
    return scored[: max(1, int(top_k))]


def fit(rows: list[dict[str, Any]], gpu: str = _gpus.DEFAULT_GPU) -> dict[str, float]:
    """BACKWARD_MMA_SCALE and ATOMIC_TBPS from measured rows (kernel "attention_backward" sweep rows, one per
    problem, and the probe's rows; each names its tile and dq mode): the pair on a 0.02 grid with the smallest mean
    |predicted / measured - 1| (the median alone lets the Tensor-Core term absorb the atomic rows and miss the
    separate-dQ row by 68%), with the median, mean and worst error."""
    seen, runs = set(), []
    for r in rows:
        probe = r.get("section") == "probe"
        if not (probe or r.get("kernel") == "attention_backward") or not r.get("ours_graph_ms") or "tile" not in r:
            continue
        key = (r["shape"], tuple(r["tile"]), r.get("dq", "atomic"))
        if key in seen:  # one problem timed beside two peers: count it once
            continue
        seen.add(key)
        bm, bn, w, st = r["tile"]
        c = {"block_m": bm, "block_n": bn, "num_warps": w, "num_stages": st, "dq": r.get("dq", "atomic")}
        runs.append((problem_of(r["shape"]), c, r["ours_graph_ms"]))
    if not runs:
        raise InputError("fit needs attention_backward rows with ours_graph_ms and tile")

    def errors(scale: float, tbps: float) -> list[float]:
        return [abs(predict(p, c, gpu, mma_scale=scale, atomic_tbps=tbps).ms / ms - 1) for p, c, ms in runs]

    grid = [(s / 100, t / 100) for s in range(50, 151, 2) for t in range(50, 151, 2)]
    best = min(grid, key=lambda st: statistics.mean(errors(*st)))
    e = errors(*best)
    return {"scale": best[0], "atomic_tbps": best[1], "error_median": statistics.median(e),
            "error_mean": statistics.mean(e), "error_max": max(e), "rows": len(e)}  # fmt: skip


def problem_of(shape: str) -> dict[str, Any]:
    """'B4 H32/8 S4096 D128 causal' (tilewise.bench.shapes.attention_name) back to a problem dict."""
    m = re.match(r"B(\d+) H(\d+)(?:/(\d+))? S(\d+) D(\d+) (causal|non-causal)", shape)
    if m is None:
        raise InputError(f"shape must read like 'B4 H32/8 S4096 D128 causal', got {shape!r}")
    b, h, hk, s, d, c = m.groups()
    return {"batch": int(b), "heads": int(h), "kv_heads": int(hk or h), "seq_q": int(s), "seq_k": int(s),
            "head_dim": int(d), "causal": c == "causal", "dtype": "bf16"}  # fmt: skip


__all__ = [
    "ATOMIC_TBPS", "BACKWARD_MMA_SCALE", "GEMMS", "atomic_bytes", "fit", "flops", "hbm_bytes", "predict", "problem_of",
    "rank", "space", "tile_budget", "useful_flops",
]  # fmt: skip
