"""Decode: fragment padding and the roofline (`model.decode`)."""

from __future__ import annotations

from typing import Any

from tilewise.advise import advise
from tilewise.model import decode, roofline
from tilewise.web import measured
from tilewise.web.params import Params
from tilewise.web.registry import gpu_summary, panel

DECODE_BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


@panel(
    "decode",
    "Decode: fragment padding and the roofline",
    ("gpu", "batch", "n", "k", "dtype"),
)
def decode_panel(p: Params) -> dict[str, Any]:
    """`model.decode.decode_gemm_point` (fragment fill for mma and wgmma, the decode GEMM
    C[batch, n] = A[batch, k] x W[k, n] on the roofline) at the chosen batch and a series."""

    g = p.gpu()
    batch = p.int("batch", 1, 1, 4096)
    n = p.int("n", 24576, 1, 1 << 17)
    k = p.int("k", 8192, 1, 1 << 17)
    dtype = p.choice("dtype", "bf16", [d for d in ("bf16", "fp16", "fp8") if d in g.dense_macs_per_tc_per_cycle])

    def point(b: int) -> dict[str, Any]:
        d = decode.decode_gemm_point(b, k, n, dtype, g).to_dict()
        d["attainable_flops"] = d["achieved_tflops"] * 1e12  # unit change only
        return d

    fills = {}
    for name in ("mma", "wgmma"):
        gran = decode.mma_granularity(name)
        f = decode.fragment_fill(batch, gran)
        padded = round(batch / f)
        fills[name] = {"rows": gran, "fill": f, "padded_rows": padded, "fragments": padded // gran}
    cur = point(batch)
    # The time model beside the roofline point: tilewise's GEMM at its default (the advisor's top-1).
    predicted = None
    if dtype in ("bf16", "fp16"):
        a = advise("gemm", {"m": batch, "n": n, "k": k, "dtype": dtype}, g.key, top_k=1)[0]
        predicted = {"model_ms": a.prediction.ms, "model_binding": a.prediction.binding, "config": a.tag,
                     "calibrated": a.prediction.calibrated, "tflops": a.tflops, "floor_ms": cur["time_s"] * 1e3}  # fmt: skip
    series = [point(b) for b in DECODE_BATCHES]
    # The roof itself, drawn through points the roofline model computes.
    lo, hi = 0.25, 4 * max(cur["balance"], DECODE_BATCHES[-1])
    roof = []
    for intensity in (lo, cur["balance"], hi):
        r = roofline.time(g, intensity * 1e9, 1e9, dtype)
        roof.append({"intensity": intensity, "attainable_flops": r.attainable_flops})
    return {
        "gpu": gpu_summary(g),
        "problem": {"batch": batch, "n": n, "k": k, "dtype": dtype},
        "fragments": fills,
        "current": cur,
        "predicted": predicted,
        "series": series,
        "roof": roof,
        "batch_for_compute_bound": decode.batch_for_compute_bound(k, n, dtype, g),
        # H200 benchmark rows of C[b, n] = A[b, k] W[k, n] for every batch b that was measured.
        "measured": [
            r for b in measured.gemm_batches(n, k, dtype) for r in measured.gemm_beside_model(g, b, n, k, dtype)
        ],
    }
