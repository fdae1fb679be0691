"""`tilewise occupancy`: one configuration's limits, and the calculator's three what-if tables."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, parse_size, require_extra
from tilewise.model.occupancy import Occupancy, occupancy, what_if


def _args_to_kwargs(a: argparse.Namespace) -> dict[str, Any]:
    g = _gpus.get(a.gpu)
    total = parse_size("--smem", a.smem)
    static = parse_size("--static-smem", a.static_smem) if a.static_smem is not None else 0
    if static > total:
        raise InputError(f"--static-smem must be at most --smem ({total} bytes), got {static}")
    kw = dict(
        gpu=g,
        threads=a.threads,
        registers=a.registers,
        static_smem=static,
        dynamic_smem=total - static,
        carveout=a.carveout,
        barriers=a.barriers,
    )
    if a.max_dynamic_smem is not None:
        kw["max_dynamic_smem"] = parse_size("--max-dynamic-smem", a.max_dynamic_smem)
    limit = g.smem_per_block_optin
    if total > limit:
        raise InputError(
            f"--smem must be at most the per-block limit of {g.name} ({limit} bytes = {limit // 1024} KB), got {total}"
        )
    return kw


def render(o: Occupancy, tables: dict[str, list[dict[str, Any]]], g: _gpus.GPU) -> str:
    lines = [
        f"{g.name}: {o.threads} threads, {o.registers} registers/thread, {o.static_smem + o.dynamic_smem} B shared memory"
        + (f", carveout {o.carveout}%" if o.carveout is not None else ""),
        "",
        f"  {'limit':<14} {'blocks/SM':>9}",
    ]
    for name, v in o.limits.items():
        mark = "  <- binding" if v == o.blocks_per_sm else ""
        shown = "-" if v >= 2**31 - 1 else v
        lines.append(f"  {name:<14} {shown:>9}{mark}")
    lines += [
        "",
        f"  blocks per SM: {o.blocks_per_sm}   warps per SM: {o.warps_per_sm} of {o.max_warps_per_sm}   "
        f"occupancy: {100 * o.occupancy:.1f}%   limiter: {', '.join(o.limiters)}",
        f"  allocated per block: {o.registers_per_block} registers, {o.smem_per_block} B shared memory; "
        f"SM carveout {o.smem_per_sm_config // 1024} KB",
    ]
    for n in o.notes:
        lines.append(f"  note: {n}")
    for key, label in (("threads", "block size"), ("registers", "registers/thread"), ("smem", "shared memory (B)")):
        rows = tables[key]
        lines += ["", f"  what if {label} varies (others fixed):"]
        xs = [r[key] for r in rows]
        if key == "smem":
            idx = list(range(0, len(rows), max(1, len(rows) // 14)))
        else:
            idx = list(range(len(rows)))
        for chunk in (idx[i : i + 16] for i in range(0, len(idx), 16)):
            lines.append("    " + f"{label[:7]:<8}" + "".join(f"{xs[i]:>7}" for i in chunk))
            lines.append("    " + f"{'blocks':<8}" + "".join(f"{rows[i]['blocks']:>7}" for i in chunk))
            lines.append("    " + f"{'warps':<8}" + "".join(f"{rows[i]['warps']:>7}" for i in chunk))
    return "\n".join(lines)


def check_plot_path(path: str) -> str:
    """The --plot FILE must lie in an existing folder and end in an image format matplotlib writes.

    Checked before any work, so a typo costs nothing and never shows a traceback.
    """
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"--plot must name a file in an existing folder, got {path!r} ({folder} does not exist)")
    if not os.access(folder, os.W_OK):
        raise InputError(f"--plot must name a file in a folder you can write, got {path!r}")
    require_extra("matplotlib", "plot")
    from matplotlib.backend_bases import FigureCanvasBase

    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    ext = os.path.splitext(str(path))[1].lower().lstrip(".")
    if ext not in formats:
        raise InputError(f"--plot must name a file ending in one of .{', .'.join(formats)}, got {path!r}")
    return path


def plot(tables: dict[str, list[dict[str, Any]]], o: Occupancy, path: str) -> None:
    check_plot_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    current = {"threads": o.threads, "registers": o.registers, "smem": o.static_smem + o.dynamic_smem}
    for ax, (key, label) in zip(
        axes,
        (
            ("threads", "threads per block"),
            ("registers", "registers per thread"),
            ("smem", "shared memory per block (bytes)"),
        ),
    ):
        xs = [r[key] for r in tables[key]]
        ax.step(xs, [r["warps"] for r in tables[key]], where="post", color="#1f77b4")
        ax.axvline(current[key], color="#d62728", ls="--", lw=1)
        ax.set_xlabel(label)
        ax.set_ylabel("resident warps per SM")
        ax.set_ylim(0, o.max_warps_per_sm + 4)
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"Occupancy on {o.gpu}: {o.blocks_per_sm} blocks, {o.warps_per_sm} warps per SM (limiter: {o.limiter})"
    )
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:  # a folder removed meanwhile, a full disk, a name the filesystem refuses
        raise InputError(f"--plot could not write {path!r}: {e.strerror or e}") from None
    finally:
        plt.close(fig)


def run(a: argparse.Namespace) -> int:
    if a.plot:
        check_plot_path(a.plot)
    kw = _args_to_kwargs(a)
    o = occupancy(**kw)
    tables = what_if(kw)
    if a.plot:
        plot(tables, o, a.plot)
    if a.json:
        print(json.dumps({**o.to_dict(), "what_if": tables}, indent=2))
    else:
        print(render(o, tables, kw["gpu"]))
        if a.plot:
            print(f"\n  plot written to {a.plot}")
    return 0
