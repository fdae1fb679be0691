"""The problems the sweep times, and their calibration / held-out split.

GEMM: LLM projections (Llama-3 8B / 70B, Mixtral-ish widths) at batch 1 .. 16384, most as
`a @ w.T` with w a Linear weight [N, K] (layout "nt"), square and odd sizes, K from 64 to 28672;
bf16 and fp16. Attention, decode and grouped GEMM: 30 each over the shapes the kernels serve.

The split is by a hash of the problem's key, so it does not depend on list order: one problem in
four is "cal" (calibration may look at it), the rest "val" (the verdict's held-out shapes).
"""

from __future__ import annotations

# The calibration anchors (tilewise.advise.validate.CAL_ANCHORS, the one copy): always in the calibration split
from tilewise.advise.validate import CAL_ANCHORS as CAL_SHAPES  # noqa: F401


def split_of(key: str) -> str:
    """'cal' or 'val' (the verdict's held-out split): tilewise.advise.validate.split_of, the one rule."""
    from tilewise.advise.validate import split_of as rule

    return rule(key)


def gemm_key(p: dict) -> str:
    return f"{p['m']}x{p['n']}x{p['k']}_{p['dtype']}_{p['layout']}"


def gemm_problems() -> list[dict]:
    out: list[dict] = []
    seen = set()

    def add(m, n, k, dtype="bf16", layout="nt"):
        p = {"m": m, "n": n, "k": k, "dtype": dtype, "layout": layout}
        key = gemm_key(p)
        if key not in seen:
            seen.add(key)
            out.append(p)

    # LLM projections (N, K): Llama-3 8B qkv / o / gate-up / down, 70B qkv / o / down (gate-up halves)
    proj8 = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]
    proj70 = [(10240, 8192), (8192, 8192), (8192, 28672)]
    for n, k in proj8:
        for m in (1, 4, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384):
            if m * n * k <= 16384 * 6144 * 4096 or m <= 4096:
                add(m, n, k)
    for n, k in proj70:
        for m in (1, 16, 64, 128, 512, 2048, 4096):
            add(m, n, k)
    # the 8192 x 24576 decode projection and its batch variants, B row-major (layout "nn")
    for m in (1, 8, 16, 48, 64, 96, 128, 256, 1024):
        add(m, 24576, 8192, layout="nn")
    # square and odd sizes, both layouts
    for s in (256, 512, 768, 1000, 1024, 1536, 2048, 3072, 4096, 5000, 6144, 8192):
        add(s, s, s, layout="nn")
    for m, n, k in (
        (333, 7777, 2049), (1000, 1000, 1000), (127, 1000, 4096), (7, 4096, 4096), (1, 1000, 64),
        (4096, 4096, 64), (4000, 4000, 64), (4096, 4096, 256), (2000, 3000, 4000), (768, 3072, 768),
        (200, 8192, 8192), (96, 12288, 4096), (80, 8192, 4096), (72, 16384, 2048), (112, 6144, 8192),
        (48, 11008, 4096), (3000, 1000, 2000), (1023, 1025, 1027), (4097, 511, 2048), (16384, 1024, 1024),
        (8192, 1024, 28672), (2048, 2048, 28672), (64, 64, 28672), (100, 100, 100),
    ):  # fmt: skip
        add(m, n, k, layout="nn")
    for m, n, k in (
        (1024, 4096, 4096), (999, 4096, 4096), (5, 11008, 4096), (3000, 5000, 128), (24, 14336, 4096),
        (3, 4096, 4096), (200, 4096, 4096), (384, 6144, 4096), (768, 28672, 4096), (3000, 4096, 14336),
        (40, 10240, 8192), (1500, 8192, 8192), (2, 8192, 28672), (600, 11008, 4096), (12000, 4096, 4096),
        (256, 2048, 2048), (2048, 512, 2048), (8192, 2048, 512), (4096, 1024, 8192), (160, 1536, 2048),
    ):  # fmt: skip
        add(m, n, k, layout="nt")
    # fp16: a cross-section of the above
    for m, n, k in (
        (1, 4096, 4096), (16, 6144, 4096), (64, 28672, 4096), (128, 4096, 14336), (512, 6144, 4096),
        (2048, 4096, 4096), (4096, 28672, 4096), (8192, 4096, 14336), (1000, 1000, 1000), (4096, 4096, 4096),
        (333, 7777, 2049), (64, 24576, 8192), (256, 8192, 8192), (16384, 4096, 4096), (7, 11008, 4096),
        (3072, 3072, 3072), (2048, 10240, 8192), (1, 28672, 4096), (32, 4096, 14336), (8192, 8192, 8192),
    ):  # fmt: skip
        add(m, n, k, dtype="fp16", layout="nt" if n != k or m % 2 == 0 else "nn")
    return out


def attention_key(p: dict) -> str:
    c = "c" if p["causal"] else "n"
    return f"b{p['batch']}h{p['heads']}kv{p['kv_heads']}q{p['seq_q']}k{p['seq_k']}d{p['head_dim']}{c}_{p['dtype']}"


def attention_problems() -> list[dict]:
    out = []
    for b, h, kv, s, d in (
        (1, 32, 32, 512, 128), (1, 32, 8, 2048, 128), (2, 32, 8, 4096, 128), (4, 32, 32, 4096, 128),
        (1, 16, 16, 8192, 128), (8, 16, 16, 1024, 64), (4, 32, 32, 4096, 64), (1, 64, 8, 2048, 64),
        (2, 16, 16, 4096, 256), (1, 8, 8, 8192, 256), (16, 12, 12, 512, 64), (1, 32, 4, 16384, 128),
        (2, 40, 8, 3000, 128), (1, 24, 24, 1000, 64), (4, 8, 8, 2048, 256),
    ):  # fmt: skip
        for causal in (True, False):
            out.append(
                {"batch": b, "heads": h, "kv_heads": kv, "seq_q": s, "seq_k": s, "head_dim": d, "causal": causal,
                 "dtype": "bf16"}
            )  # fmt: skip
    return out


def decode_key(p: dict) -> str:
    return f"b{p['batch']}h{p['heads']}kv{p['kv_heads']}L{p['seq_len']}d{p['head_dim']}_{p['dtype']}"


def decode_problems() -> list[dict]:
    # (group = heads / kv_heads, head_dim) in five combinations, so the sweep compiles few variants
    out = []
    for b, h, kv, L, d in (
        (1, 32, 8, 4096, 128), (1, 32, 8, 32768, 128), (1, 32, 8, 65536, 128), (1, 32, 8, 131072, 128),
        (2, 32, 8, 16384, 128), (4, 32, 8, 8192, 128), (8, 32, 8, 32768, 128), (16, 32, 8, 8192, 128),
        (32, 32, 8, 4096, 128), (64, 32, 8, 4096, 128), (128, 32, 8, 2048, 128), (256, 32, 8, 1024, 128),
        (1, 32, 8, 1000, 128), (3, 32, 8, 5000, 128), (12, 32, 8, 12000, 128), (1, 32, 8, 256, 128),
        (32, 32, 8, 512, 128), (4, 64, 16, 32768, 128), (1, 64, 16, 65536, 128),
        (1, 64, 8, 16384, 128), (8, 64, 8, 8192, 128), (1, 128, 16, 8192, 128),
        (1, 32, 32, 32768, 128), (16, 32, 32, 2048, 128),
        (1, 16, 4, 16384, 64), (16, 16, 4, 4096, 64), (64, 16, 4, 1024, 64),
        (1, 16, 4, 16384, 256), (8, 16, 4, 4096, 256), (2, 16, 4, 8192, 256),
    ):  # fmt: skip
        out.append({"batch": b, "heads": h, "kv_heads": kv, "seq_len": L, "head_dim": d, "dtype": "bf16"})
    return out


def grouped_key(p: dict) -> str:
    return f"e{p['experts']}r{p['rows_per_expert']}n{p['n']}k{p['k']}_{p['dtype']}"


def grouped_problems() -> list[dict]:
    # five expert counts (the schedule's search depth is a compile-time constant)
    out = []
    for e, r, n, k in (
        (128, 8, 1536, 2048), (128, 16, 1536, 2048), (128, 32, 1536, 2048), (128, 64, 1536, 2048),
        (128, 128, 1536, 2048), (128, 256, 1536, 2048), (128, 1000, 1536, 2048), (128, 4, 768, 2048),
        (64, 64, 2816, 2048), (64, 256, 2048, 1408), (64, 8, 1408, 2048), (64, 512, 1408, 2048),
        (64, 100, 1408, 2048), (64, 24, 1536, 5120),
        (8, 512, 14336, 4096), (8, 2048, 14336, 4096), (8, 4096, 4096, 14336), (8, 128, 14336, 4096),
        (8, 16, 14336, 4096), (8, 1, 14336, 4096), (8, 4096, 8192, 8192),
        (16, 1024, 14336, 4096), (16, 64, 4096, 14336), (16, 300, 6400, 5120), (16, 2048, 2048, 2048),
        (256, 8, 2048, 7168), (256, 32, 2048, 7168), (256, 16, 7168, 2048), (256, 64, 1024, 2048),
        (256, 128, 2048, 2048),
    ):  # fmt: skip
        out.append({"experts": e, "rows_per_expert": r, "n": n, "k": k, "dtype": "bf16"})
    return out


FAMILIES = {
    "gemm": (gemm_problems, gemm_key),
    "gemm_gluon": (gemm_problems, gemm_key),  # the same problems, the Gluon kernel's space
    "attention": (attention_problems, attention_key),
    "decode": (decode_problems, decode_key),
    "grouped": (grouped_problems, grouped_key),
}


# ------------------------------------------------------------------------------------ the fresh held-out set

FRESH_SEED = 20261201  # tests/data/sweeps/h200/fresh/meta.json records it beside the rows


def _log_uniform(r, lo: int, hi: int) -> int:
    import math

    return max(lo, min(hi, round(math.exp(r.uniform(math.log(lo), math.log(hi))))))


def fresh_problems(family: str, seed: int = FRESH_SEED, count: int = 0) -> list[dict]:
    """Problems drawn at random, never seen by the calibration: log-uniform sizes (odd ones included),
    both GEMM layouts, fp16 and bf16. GEMM: M, N, K in [1, 16384], at most 2e12 FLOPs (6 ms at 700 TFLOP/s:
    the sweep's wall-clock budget); attention: batch 1-8, 8-32 heads (GQA groups 1, 4, 8), sequence
    128-16384, head_dim 64/128/256, causal or not; decode: batch 1-128, 32 or 64 heads over 8 KV heads,
    256-131072 keys, head_dim 64/128; grouped: 8-128 experts of 1-2048 rows, N and K 512-16384 (multiples
    of 8: the kernel's TMA rows)."""
    import random

    r = random.Random(f"{seed}:{family}")
    n = count or {"gemm": 40, "attention": 12, "decode": 12, "grouped": 12}[family]
    out: list[dict] = []
    keyf = FAMILIES[family][1]
    seen: set[str] = set()
    while len(out) < n:
        dt = r.choice(("fp16", "bf16"))
        if family == "gemm":
            m, nn, k = (_log_uniform(r, 1, 16384) for _ in range(3))
            if 2 * m * nn * k > 2e12:
                continue
            p: dict = {"m": m, "n": nn, "k": k, "dtype": dt, "layout": r.choice(("nn", "nt"))}
        elif family == "attention":
            h = r.choice((8, 16, 32))
            s = _log_uniform(r, 128, 16384)
            b = _log_uniform(r, 1, 8)
            if b * h * s * s > 2**33:
                continue
            p = {"batch": b, "heads": h, "kv_heads": h // r.choice((1, 4, 8)), "seq_q": s, "seq_k": s,
                 "head_dim": r.choice((64, 128, 256)), "causal": r.random() < 0.5, "dtype": dt}  # fmt: skip
        elif family == "decode":
            h = r.choice((32, 64))
            p = {"batch": _log_uniform(r, 1, 128), "heads": h, "kv_heads": 8, "seq_len": _log_uniform(r, 256, 131072),
                 "head_dim": r.choice((64, 128)), "dtype": dt}  # fmt: skip
            if p["batch"] * p["seq_len"] > 2**21:
                continue
        else:
            p = {"experts": r.choice((8, 16, 64, 128)), "rows_per_expert": _log_uniform(r, 1, 2048),
                 "n": 8 * _log_uniform(r, 64, 2048), "k": 8 * _log_uniform(r, 64, 2048), "dtype": dt}  # fmt: skip
            if 2 * p["experts"] * p["rows_per_expert"] * p["n"] * p["k"] > 2e12:
                continue
        key = keyf(p)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out
