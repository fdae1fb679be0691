"""`tilewise bench grouped`: the persistent grouped GEMM vs torch._grouped_mm and a loop of matmuls.

The MoE expert shapes of issue 7 (H200 peer figures in ../shared/measurements/):
128 experts, K 2048, N 1536 at 8, 16, 32, 64, 128 rows per expert and with Zipf-skewed
routing; 256 experts, K 7168, N 4096 at 16 and 64 rows; 16 experts x 1024 rows, K 4096,
N 14336. Each row carries the model's prediction: the roofline time of the FLOPs and bytes of
`model.traffic.grouped_gemm_*`, and, from `model.waves.grouped_schedule`, the tiles, the
waves of tiles over the persistent programs and the share of time the per-tile prologue and
epilogue take (`prologue_share`).
"""

from __future__ import annotations

import math

DEVICE = "cuda"  # the suites run on the GPU (a CPU smoke test may change it)
NAME = "grouped"
HELP = "persistent grouped GEMM (MoE experts) vs torch._grouped_mm and a loop of matmuls"

# name: (experts, rows per expert or "zipf", K, N)
SHAPES: dict[str, tuple[int, int | str, int, int]] = {
    "e128_r8": (128, 8, 2048, 1536),
    "e128_r16": (128, 16, 2048, 1536),
    "e128_r32": (128, 32, 2048, 1536),
    "e128_r64": (128, 64, 2048, 1536),
    "e128_r128": (128, 128, 2048, 1536),
    "e128_zipf": (128, "zipf", 2048, 1536),
    "e256_r16": (256, 16, 7168, 4096),
    "e256_r64": (256, 64, 7168, 4096),
    "e16_r1024": (16, 1024, 4096, 14336),
}
ZIPF_ROWS = 16384  # 128 experts x 128 rows on average, Zipf(s = 1) over a random expert order


def zipf_counts(experts: int, total: int, s: float = 1.0, seed: int = 0) -> list[int]:
    """Rows per expert ~ 1 / rank^s, experts in a random (seeded) order; sums to `total`."""
    import random

    w = [1.0 / (r + 1) ** s for r in range(experts)]
    z = sum(w)
    counts = [int(total * x / z) for x in w]
    counts[0] += total - sum(counts)
    rng = random.Random(seed)
    rng.shuffle(counts)
    return counts


def shape_counts(name: str) -> tuple[list[int], int, int]:
    """(rows per expert, K, N) of a named shape."""
    E, rows, K, N = SHAPES[name]
    counts = zipf_counts(E, ZIPF_ROWS) if rows == "zipf" else [int(rows)] * E
    return counts, K, N


# ------------------------------------------------------------------- the model's prediction


from tilewise.model.waves import persistent_prologue_share as prologue_share  # noqa: E402


def model_columns(counts, K: int, N: int, cfg, sms: int = 132) -> dict:
    """Tiles, waves over the persistent programs (`sms` x programs per SM) and the prologue/epilogue share."""
    from tilewise.model import waves

    sched = waves.grouped_schedule(counts, cfg.block_m, N, cfg.block_n)
    tiles = sched.total_tiles
    sms = sms * getattr(cfg, "programs_per_sm", 1)  # persistent programs
    return {
        "config": cfg.key(),
        "tiles": tiles,
        "waves": tiles / sms,
        "wave_efficiency": tiles / (math.ceil(tiles / sms) * sms) if tiles else 1.0,
        "prologue_share": prologue_share(counts, K, N, cfg.block_m, cfg.block_n, cfg.block_k),
        "weight_tbps": None,
    }


# ------------------------------------------------------------------------------ inputs/peers


def make_inputs(counts, K: int, N: int, dtype, device=None, copies: int = 1, seed: int = 0):
    """x [T, K], w [E, K, N] (scaled so y is O(1)), offsets int32 [E]; `copies` sets of them."""
    import torch

    device = device or DEVICE
    g = torch.Generator(device=device).manual_seed(seed)
    T = sum(counts)
    out = []
    for _ in range(copies):
        x = torch.randn(T, K, device=device, dtype=dtype, generator=g)
        w = torch.randn(len(counts), K, N, device=device, dtype=dtype, generator=g) / math.sqrt(K)
        out.append(x)
        out.append(w)
    offsets = torch.tensor(counts, device=device).cumsum(0).to(torch.int32)
    return out, offsets


def loop_matmul(x, w, counts):
    """The plain peer: one torch.matmul per expert (host-side split by the known counts)."""
    import torch

    y = torch.empty(x.shape[0], w.shape[2], device=x.device, dtype=x.dtype)
    s = 0
    for e, c in enumerate(counts):
        if c:
            torch.matmul(x[s : s + c], w[e], out=y[s : s + c])
        s += c
    return y


def default_configs():
    """Tuned configs per shape (H200 sweep: benchmarks/gpu/queue/moe_gpu.py); None = choose_config."""
    return {}


# ------------------------------------------------------------------------------------ suite


def add_arguments(p) -> None:
    p.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: " + ",".join(SHAPES))
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds per pair (default 3)")
    p.add_argument("--no-loop", action="store_true", help="skip the loop-of-matmuls peer")


def bench_shape(name: str, dtype_name: str, rounds: int, tags: dict, loop: bool = True, config=None) -> list[dict]:
    """Rows for one shape: ours vs torch._grouped_mm and (if `loop`) ours vs a loop of matmuls."""
    import torch

    from tilewise.bench import harness
    from tilewise.kernels.grouped_gemm import choose_config, grouped_matmul
    from tilewise.model import traffic

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    counts, K, N = shape_counts(name)
    E = len(counts)
    T = sum(counts)
    wbytes = E * K * N * 2
    copies = max(1, min(3, int(2e9 // max(wbytes, 1))))  # rotate inputs when they fit, so L2 is cold
    tensors, offsets = make_inputs(counts, K, N, dtype, copies=copies)
    xs, ws = tensors[0::2], tensors[1::2]
    cfg = config or choose_config(T / E, N, K, dtype)
    ys = [torch.empty(T, N, device=DEVICE, dtype=xs[0].dtype) for _ in range(copies)]
    flops = traffic.grouped_gemm_flops(counts, K, N)
    nbytes = traffic.grouped_gemm_bytes(counts, K, N, dtype_name)
    extra = model_columns(counts, K, N, cfg, torch.cuda.get_device_properties(0).multi_processor_count)
    shape = f"E{E} rows{'zipf' if SHAPES[name][1] == 'zipf' else SHAPES[name][1]} K{K} N{N} (T {T})"

    def ours(i):
        return grouped_matmul(xs[i], ws[i], offsets, out=ys[i], config=cfg, check_offsets=False)

    def peer(i):
        return torch._grouped_mm(xs[i], ws[i], offs=offsets)

    rows = []
    t = harness.time_pair(ours, peer, rotate=copies, rounds=rounds)
    ex = dict(
        extra, weight_tbps=wbytes / (t["ours_ms"] * 1e-3) / 1e12, peer_weight_tbps=wbytes / (t["peer_ms"] * 1e-3) / 1e12
    )
    ex.update(harness.timing_fields(t))
    rows.append(
        harness.make_row(
            kernel="grouped_matmul", shape=shape, dtype=dtype_name, peer="torch._grouped_mm", ours_ms=t["ours_ms"],
            peer_ms=t["peer_ms"], flops=flops, nbytes=nbytes, tags=tags, extra=ex,
        )
    )  # fmt: skip
    if loop:
        t2 = harness.time_pair(
            ours, lambda i: loop_matmul(xs[i], ws[i], counts), rotate=copies, rounds=max(1, rounds // 2)
        )
        ex2 = dict(extra, weight_tbps=wbytes / (t2["ours_ms"] * 1e-3) / 1e12)
        rows.append(
            harness.make_row(
                kernel="grouped_matmul", shape=shape, dtype=dtype_name, peer="loop of torch.matmul",
                ours_ms=t2["ours_ms"], peer_ms=t2["peer_ms"], flops=flops, nbytes=nbytes, tags=tags, extra=ex2,
            )
        )  # fmt: skip
    torch.cuda.empty_cache()
    return rows


def run(args, progress) -> list[dict]:
    from tilewise.bench import harness
    from tilewise.errors import InputError

    names = [s.strip() for s in args.shapes.split(",") if s.strip()]
    for n in names:
        if n not in SHAPES:
            raise InputError(f"--shapes must name shapes of {list(SHAPES)}, got {n!r}")
    tags = harness.env_tags()
    rows: list[dict] = []
    for n in progress(names, total=len(names), desc="grouped"):
        rows += bench_shape(n, args.dtype, args.rounds, tags, loop=not args.no_loop, config=default_configs().get(n))
    return rows
