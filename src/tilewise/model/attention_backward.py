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


# The tiles `tilewise.kernels.attention_backward` launches (one table for the kernel, the advisor and the explain walk),
# chosen by benchmarks/attention_backward_tune.py (H200, bf16, CUDA-graph replays, 2026-12-01, triton 3.6,
# benchmarks/results/h200/attention_backward_tune.json, section "tiles"; tile = block_m x block_n x warps x stages;
# every variant's dQ, dK, dV within 3e-2 of cuDNN's, relative to the largest element):
# * the dQ mode: the second kernel (7 GEMMs a pair, no atomics) beats the atomic fp32 adds (5 GEMMs) on all five
#   probe problems once each mode has its own best tiles (ms; the separate mode's time is its two kernels' sum, the
#   dK/dV family's row plus the dQ family's row less their shared one):
#     B4 H32 S4096 D64 3.61 vs 4.45 | B4 H32 S1024 D64 causal 0.221 vs 0.278 | B1 H32 S8192 D128 7.07 vs 7.26
#     B1 H32 S8192 D128 causal 3.80 vs 4.26 | B2 H16 S4096 D256 causal 3.40 vs 4.59
#   so the default mode is "separate", which is also bitwise repeatable (the deterministic mode costs nothing);
# * dK/dV program, no atomics in it (ms with the dQ kernel at its previous tile):
#     d = 64:  32x128x4x3 3.658 / 0.234 (S1024 causal) | 64x64x4x3 3.826 / 0.261 | 64x128x8x2 4.479 / 0.273
#     d = 128: 64x128x8x3 7.525 / 4.158 (causal) | 64x128x8x2 7.601 / 4.129 | 32x128x8x2 8.469 / 4.513
#     d = 256: 64x64x8x2 3.927 | 64x64x8x1 4.049 | 32x64x8x2 4.151 (2 stages fit only without the atomic dQ)
# * dQ kernel (with the dK/dV program at 64x128x8x2, d = 256: 64x64x8x1):
#     d = 64:  64x64x4x3 4.456 / 0.260 | 128x64x8x3 4.404 / 0.279 | 128x64x8x2 4.535 / 0.273
#     d = 128: 128x64x8x3 7.148 / 3.777 | 128x128x8x2 7.517 / 3.991 | 128x64x8x2 7.603 / 4.136
#     d = 256: 128x64x8x1 3.524 | 128x32x8x2 3.537 | 64x64x8x2 4.049
#   (a tile's mean time over its head dim's problems, each divided by the best on it, picks: d = 64 64x64x4x3 by
#   0.6%; the timing noise, one configuration timed twice, is <= 1.2%);
# * the atomic mode keeps its own best dK/dV tiles: d = 64 64x64x4x3 4.445 / 0.278, d = 128 64x128x8x3 7.262 / 4.262,
#   d = 256 64x64x8x1 4.588. Head dims 16 and 32 (not timed) take d = 64's tiles.
DQ_MODE = "separate"
# head_dim: (dK/dV tile without atomics, dQ-kernel tile, dK/dV tile of the atomic mode)
SHIPPED: dict[int, tuple[tuple[int, int, int, int], tuple[int, int, int, int], tuple[int, int, int, int]]] = {
    16: ((32, 128, 4, 3), (64, 64, 4, 3), (64, 64, 4, 3)),
    32: ((32, 128, 4, 3), (64, 64, 4, 3), (64, 64, 4, 3)),
    64: ((32, 128, 4, 3), (64, 64, 4, 3), (64, 64, 4, 3)),
    128: ((64, 128, 8, 3), (128, 64, 8, 3), (64, 128, 8, 3)),
    256: ((64, 64, 8, 2), (128, 64, 8, 1), (64, 64, 8, 1)),
}


def shipped_config(head_dim: int, deterministic: bool = False, dq: str | None = None) -> dict[str, Any]:
    """The tiles the kernel launches for `head_dim` (16-bit inputs): block_m, block_n, num_warps, num_stages of the
    dK/dV program, dq_block_m, dq_block_n, dq_warps, dq_stages of the dQ kernel, and `dq` (the mode: DQ_MODE, or
    "separate" when `deterministic`)."""
    if head_dim not in SHIPPED:
        raise InputError(f"head_dim must be one of {', '.join(map(str, SHIPPED))}, got {head_dim}")
    mode = "separate" if deterministic else (dq or DQ_MODE)
    if mode not in GEMMS:
        raise InputError(f"dq must be one of {', '.join(GEMMS)}, got {mode!r}")
    kv, qt, atomic = SHIPPED[head_dim]
    bm, bn, w, st = atomic if mode == "atomic" else kv
    qm, qn, qw, qs = qt
    return {"block_m": bm, "block_n": bn, "num_warps": w, "num_stages": st, "dq_block_m": qm, "dq_block_n": qn,
            "dq_warps": qw, "dq_stages": qs, "dq": mode}  # fmt: skip


# Two figures the calibration scheme has no microbenchmark for, fitted by `fit` to the rows of
# benchmarks/results/h200/attention_backward_tune.json (section "tiles": 5 problems x 22 configurations of both dQ
# modes, H200 bf16, CUDA graphs; the 51 distinct runs whose dK/dV tile fits the register budget);
# tests/test_model_attention_backward.py refits both from the rows.
# * BACKWARD_MMA_SCALE: the backward's Tensor-Core efficiency relative to the forward's calibrated median
#   (`attention_mma_eff_median`): five (or seven) dependent GEMMs per step, two fed from registers (P^T, dS^T).
# * ATOMIC_TBPS: the rate at which the GPU resolves the atomic fp32 adds of dQ in L2. The large atomic-mode rows all
#   run at ~0.8-1.0 TB/s of atomic traffic (`atomic_bytes` / time) whatever their head dim, mask and GQA group:
#   those adds, not the Tensor Cores, bind the atomic mode, which is why the shipped mode is the separate dQ kernel.
# The fit (mean |predicted / measured - 1|): 1.14 and 0.96 TB/s; error median 12.0%, mean 23.8%. Worst: the atomic mode
# with 64-key blocks at d = 64 (B4 H32 S4096: 8.95 ms predicted, 4.45 measured; twice the adds of 128-key blocks,
# resolved faster than the fitted rate), d = 256 in the separate mode (1.6-1.9x the prediction: no term for its
# register pressure) and the short causal problem B4 H32 S1024 D64 (1.6-2x: no term for a program's fixed cost).
BACKWARD_MMA_SCALE = 1.14
ATOMIC_TBPS = 0.96
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
        qm = int(config.get("dq_block_m", bm))
        l2 += 2 * (pairs_pad / max(1, qm)) * d * e * B * H  # K and V per query block of the dQ kernel
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
        if r.get("section") == "tiles" and r.get("graph_ms"):  # benchmarks/attention_backward_tune.py
            tile, dq, ms = r["dkdv"], "atomic" if r["kind"] == "atomic" else "separate", r["graph_ms"]
            dq_m = r["dq_tile"][0]
        elif (r.get("section") == "probe" or r.get("kernel") == "attention_backward") and r.get("ours_graph_ms"):
            if "tile" not in r:
                continue
            tile, dq, ms = r["tile"], r.get("dq", "atomic"), r["ours_graph_ms"]
            dq_m = (r.get("dq_tile") or [tile[0]])[0]
        else:
            continue
        key = (r["shape"], tuple(tile), dq, dq_m)
        if key in seen:  # one problem timed beside two peers (or one configuration twice): count it once
            continue
        seen.add(key)
        bm, bn, w, st = tile
        p = problem_of(r["shape"])
        if not tile_budget(p["head_dim"], bm, bn, w, st, p["dtype"], gpu)["registers"]["fits"]:
            continue  # the model has no term for spilled registers (such tiles run 2-4x slower)
        c = {"block_m": bm, "block_n": bn, "num_warps": w, "num_stages": st, "dq": dq, "dq_block_m": dq_m}
        runs.append((p, c, ms))
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
    "ATOMIC_TBPS", "BACKWARD_MMA_SCALE", "DQ_MODE", "GEMMS", "SHIPPED", "atomic_bytes", "fit", "flops", "hbm_bytes", "predict", "problem_of",
    "rank", "shipped_config", "space", "tile_budget", "useful_flops",
]  # fmt: skip
