"""A roofline plot of benchmark rows: measured TFLOP/s against arithmetic intensity.

The roofs come from the GPU registry (`tilewise.gpus`): the dense Tensor-Core peak of each
dtype in the rows and the HBM line (datasheet), plus the measured copy bandwidth where the
registry records one. Each row is one point for ours (filled) and one for the peer (hollow),
joined by a thin line, so the distance to the roof and to the peer read off together.
"""

from __future__ import annotations

from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import require_extra

# The H200's device-to-device copy, bytes read + written, measured 2026-11-30
# (the source of the H200 entry's hbm_bytes_per_s in tilewise.gpus): the bandwidth a kernel can reach.
MEASURED_COPY_BYTES_PER_S = {"h200": 4.28e12}


def _points(rows: list[dict[str, Any]]) -> Any:
    for r in rows:
        flops, nbytes = r.get("flops"), r.get("bytes")
        if not flops or not nbytes:
            continue
        yield r, flops / nbytes


def roofline_plot(rows: list[dict[str, Any]], path: str, *, gpu: str | None = None, title: str | None = None) -> str:
    """Draw `rows` (from `tilewise.bench.harness.make_row`) on the GPU's roofline; write `path` (PNG/SVG/PDF)."""
    require_extra("matplotlib", "plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = gpu or next((r.get("model_gpu") for r in rows if r.get("model_gpu")), None) or _gpus.DEFAULT_GPU
    g = _gpus.get(key)
    pts = list(_points(rows))
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=120)
    xs = [x for _, x in pts] or [1.0]
    lo, hi = min(min(xs) / 2, 0.1), max(max(xs) * 2, 2000)
    bw = _gpus.bandwidth(g, "hbm")
    # Tensor-Core roofs for the dtypes of rows that use them (a reduction at 0.25 FLOP/B does not).
    dtypes = sorted({_gpus.dtype_name(r.get("dtype", "bf16")) for r, x in pts if x >= 1} or {"bf16"})
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for dt in dtypes:
        peak = _gpus.peak_flops(g, dt)
        ax.plot(
            grid,
            [min(peak, x * bw) / 1e12 for x in grid],
            "-",
            lw=1.5,
            label=f"roof: {dt} {peak / 1e12:.0f} TFLOP/s, HBM {bw / 1e12:.1f} TB/s",
        )
        ax.axvline(peak / bw, color="gray", lw=0.5, ls=":")
    copy = MEASURED_COPY_BYTES_PER_S.get(g.key)
    if copy:
        top = max(_gpus.peak_flops(g, dt) for dt in dtypes)
        ax.plot(
            grid,
            [min(top, x * copy) / 1e12 for x in grid],
            "--",
            color="gray",
            lw=1,
            label=f"measured copy {copy / 1e12:.2f} TB/s",
        )
    kernels = sorted({r.get("kernel", "?") for r, _ in pts})
    markers = dict(zip(kernels, "osD^v<>p*h"))
    for kern in kernels:
        sel = [(r, x) for r, x in pts if r.get("kernel", "?") == kern]
        ours = [(x, r["tflops"]) for r, x in sel if r.get("tflops")]
        peer = [(x, r["peer_tflops"]) for r, x in sel if r.get("peer_tflops")]
        for r, x in sel:
            if r.get("tflops") and r.get("peer_tflops"):
                ax.plot([x, x], [r["tflops"], r["peer_tflops"]], "-", color="lightgray", lw=0.8, zorder=1)
        if ours:
            ox, oy = zip(*ours)
            ax.scatter(ox, oy, marker=markers[kern], s=28, zorder=3, label=f"tilewise {kern}")
        if peer:
            peer_name = next((r.get("peer") for r, _ in sel if r.get("peer")), "peer")
            px, py = zip(*peer)
            ax.scatter(px, py, marker=markers[kern], s=28, facecolors="none", edgecolors="k", zorder=2, label=peer_name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of HBM traffic, model.traffic)")
    ax.set_ylabel("TFLOP/s (measured)")
    date = next((r.get("date") for r in rows if r.get("date")), "")
    dev = next((r.get("gpu") for r in rows if r.get("gpu")), g.name)
    ax.set_title(title or f"{dev}: measured vs roofline {date}")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


__all__ = ["MEASURED_COPY_BYTES_PER_S", "roofline_plot"]
