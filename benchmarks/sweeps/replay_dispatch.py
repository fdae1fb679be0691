"""Replay `matmul`'s dispatch over the sweep's measured rows: the verdict against cuBLAS without a GPU.

    python benchmarks/sweeps/replay_dispatch.py [--sweep tests/data/sweeps/h200] [--without TAG,...] [--json]

For every GEMM problem of the sweep it asks the dispatch what a CUDA-graph call would run (the Triton kernel's
advised top-1, or the Gluon kernel's best where the model predicts it faster: `tilewise.kernels.gemm.choose_kernel`'s
rule, through the same cached functions), looks that config's time up in the sweep rows (gemm.jsonl for the Triton
kernel, gemm_gluon.jsonl for the Gluon one) and divides it into the cuBLAS row of the same file. It prints the
median speedup, the count below 0.90x and the problems furthest below; `--without` drops Gluon configs from the
space first (what the verdict was before they were added). A problem whose chosen config has no sweep row is
listed as unmeasured. The fixture run (benchmarks/gemm_vs_cublas.py) is the measurement; this is its forecast
(at 47ba191 the replay gave 0.978x / 30 below 0.90x, the fixture run 0.995x / 29).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "src"))

from tilewise.errors import InputError  # noqa: E402


def rows_by_key(path: str) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """({key: {tag: ms}} of the space rows, {key: cuBLAS ms}) of one sweep file."""
    by: dict[str, dict[str, float]] = {}
    cublas: dict[str, float] = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if "ms" not in r:
                continue
            if r["source"] == "cublas":
                cublas[r["key"]] = r["ms"]
            elif r["source"] == "space":
                by.setdefault(r["key"], {})[r["tag"]] = r["ms"]
    return by, cublas


def replay(sweep: str, without: tuple[str, ...] = ()) -> list[dict]:
    from tilewise.advise import space
    from tilewise.kernels import gemm

    for name in ("gemm.jsonl", "gemm_gluon.jsonl"):
        if not os.path.isfile(os.path.join(sweep, name)):
            raise InputError(f"--sweep must be a folder with gemm.jsonl and gemm_gluon.jsonl (sweep.py's rows), "
                             f"got {sweep!r} without {name}")  # fmt: skip
    known = {space.gemm_gluon_tag(c) for c in space.gemm_gluon_space(8192, 8192, 8192, "bf16", "h200")}
    unknown = sorted(set(without) - known)
    if unknown:
        raise InputError(f"--without takes Gluon config tags (such as {min(known)}), got {', '.join(unknown)}")
    if without:  # the space as it was before these configs: drop them from every table the space reads
        for name in ("GEMM_GLUON", "GEMM_GLUON_SPLIT_EPILOGUE", "GEMM_GLUON_THREE", "GEMM_GLUON_THREE_SPLIT_EPILOGUE",
                     "GEMM_GLUON_STREAM_K"):  # fmt: skip
            table = getattr(space, name, ())
            keep = []
            for row in table:
                c = dict(zip(("schedule", "block_m", "block_n", "block_k", "num_stages", "group_m"), row))
                tags = {space.gemm_gluon_tag(c), space.gemm_gluon_tag({**c, "epilogue_parts": 2}),
                        space.gemm_gluon_tag({**c, "stream_k": True})}  # fmt: skip
                if not tags & set(without):
                    keep.append(row)
            setattr(space, name, tuple(keep))
    tri, tri_cublas = rows_by_key(os.path.join(sweep, "gemm.jsonl"))
    glu, glu_cublas = rows_by_key(os.path.join(sweep, "gemm_gluon.jsonl"))
    out = []
    for key in sorted(tri_cublas):
        shape, dt, layout = key.split("_")
        m, n, k = (int(x) for x in shape.split("x"))
        tcfg, t_ms, g, g_ms = gemm.model_candidates(m, n, k, dt, layout, None, "h200")
        if g is not None and g_ms is not None and g_ms < t_ms:
            kernel, tag, ms, ref = "gluon", g.tag(), glu.get(key, {}).get(g.tag()), glu_cublas.get(key)
        else:
            kernel, tag, ms, ref = "triton", tcfg.tag(), tri.get(key, {}).get(tcfg.tag()), tri_cublas[key]
        out.append({"key": key, "kernel": kernel, "tag": tag, "ms": ms, "cublas_ms": ref,
                    "speedup": ref / ms if ms and ref else None})  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", default=os.path.join(ROOT, "tests", "data", "sweeps", "h200"))
    ap.add_argument("--without", default="", help="Gluon config tags to drop from the space first (comma list)")
    ap.add_argument("--json", action="store_true", help="every problem's row as JSON")
    a = ap.parse_args(argv)
    try:
        rows = replay(a.sweep, tuple(t for t in a.without.split(",") if t))
    except InputError as e:
        print(f"replay_dispatch: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    sp = [r["speedup"] for r in rows if r["speedup"]]
    print(f"{len(sp)} of {len(rows)} problems measured: median {statistics.median(sp):.3f}x cuBLAS, "
          f"{sum(s < 0.9 for s in sp)} below 0.90x, {sum(r['kernel'] == 'gluon' for r in rows)} on Gluon")  # fmt: skip
    for r in sorted((r for r in rows if r["speedup"]), key=lambda r: r["speedup"])[:12]:
        print(f"  {r['key']:32s} {r['kernel']:6s} {r['tag']:28s} {r['ms'] * 1e3:8.1f} us  {r['speedup']:.3f}x")
    for r in rows:
        if not r["speedup"]:
            print(f"  unmeasured: {r['key']} {r['kernel']} {r['tag']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
