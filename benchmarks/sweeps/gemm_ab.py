"""A/B of a kernels/gemm.py change on the GEMM shapes furthest from cuBLAS, side by side in one process.

    python benchmarks/sweeps/gemm_ab.py --before OLD_GEMM_PY --out DIR [--workers 14] [--rounds 5]

OLD_GEMM_PY is the previous kernels/gemm.py (e.g. `git show 07a6e2d:src/tilewise/kernels/gemm.py`),
imported as its own module, so its kernels compile beside the new ones. Per shape it times, with the
sweep's own method (benchmarks/sweeps/sweep.py `time_problem`: CUDA graphs over rotating input copies
(L2 flushed), alternating rounds, median; every config checked against the float32 product first):

* `before:<tag>`: the old kernel at the best config of the committed sweep (tests/data/sweeps/h200/gemm.jsonl);
* `<tag>`: the new kernel at that config; `cand:<tag>`: the new kernel at the persistent configs the change
  opens (a @ w.T, fewer tiles than SMs) and a few candidate tiles; `nopad:<tag>`: the new kernel at the best
  config with the launcher's row padding copy switched off (the run committed as gemm_ab_h200.jsonl
  switched it off through the rule's previous form, PAD_MIN_FLOPS_PER_BYTE);
* `hand`: the new kernel's default (the advisor's top-1), `cublas`: torch.matmul.

Rows go to DIR/gemm_ab.jsonl; DIR/gemm_ab_meta.json holds GPU, date, versions, host CPU and command.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import importlib.util
import json
import multiprocessing as mp
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))

import sweep  # noqa: E402

from tilewise.advise import space as S  # noqa: E402

FIXTURE = os.path.join(HERE, "..", "..", "tests", "data", "sweeps", "h200", "gemm.jsonl")
SHAPES = (
    "3000x5000x128_bf16_nt", "1000x1000x1000_fp16_nt", "100x100x100_bf16_nn", "1000x1000x1000_bf16_nn",
    "3000x1000x2000_bf16_nn", "333x7777x2049_fp16_nt", "5000x5000x5000_bf16_nn", "2000x3000x4000_bf16_nn",
    "1536x1536x1536_bf16_nn", "384x6144x4096_bf16_nt", "600x11008x4096_bf16_nt", "512x10240x8192_bf16_nt",
    "64x64x28672_bf16_nn", "768x3072x768_bf16_nn", "8192x8192x8192_fp16_nt",
)  # fmt: skip
# candidate persistent tiles beyond the space's (each compiled for sm_90 with triton 3.6 and 3.9 first)
EXTRA = (
    S._gemm_cfg(256, 128, 64, 8, 3, persistent=True),
    S._gemm_cfg(64, 256, 64, 4, 4, persistent=True),
    S._gemm_cfg(128, 256, 64, 8, 3, group_m=16, persistent=True),
    S._gemm_cfg(128, 128, 128, 8, 3, persistent=True),
)

_BEFORE = None


def _before(path: str):
    global _BEFORE
    if _BEFORE is None:
        spec = importlib.util.spec_from_file_location("tilewise_gemm_before", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses look their module up
        spec.loader.exec_module(mod)
        _BEFORE = mod
    return _BEFORE


def _patch(before_path: str) -> None:
    """sweep.make_call learns the A/B sources (in the timing process and in every compile worker)."""
    plain = sweep.make_call

    def make_call(torch, family, p, source, cfg):
        if source == "before":
            old = _before(before_path)
            conf = old.Config(**cfg)
            return lambda s: old.matmul(s[0], s[1], out=s[2], config=conf)
        if source == "nopad":
            from tilewise.kernels import gemm

            conf = gemm.Config(**cfg, reason="nopad")  # its own plan-cache entry

            def call(s):  # the launcher's padding rule says no while the plan is made
                saved, gemm.predict.pads_operand = gemm.predict.pads_operand, lambda flops, nbytes: False
                try:
                    return gemm.matmul(s[0], s[1], out=s[2], config=conf)
                finally:
                    gemm.predict.pads_operand = saved

            return call
        return plain(torch, family, p, "space" if source == "cand" else source, cfg)

    sweep.make_call = make_call


def _worker_init(before_path: str) -> None:
    sweep._worker_init()
    _patch(before_path)


def items_for(key: str, rows: list[dict]) -> tuple[dict, list]:
    mine = [r for r in rows if r.get("key") == key]
    p = mine[0]["problem"]
    best = min((r for r in mine if r.get("source") == "space" and "ms" in r), key=lambda r: r["ms"])
    items = [("before", best["config"]), ("space", best["config"])]
    seen = {S.gemm_tag(best["config"])}
    for c in [c for c in S.gemm_grid() if c["persistent"]] + list(EXTRA):
        if S.gemm_tag(c) in seen:
            continue
        e = S.gemm_fits(c, p["m"], p["n"], p["k"], p["dtype"], "h200", "nn")
        if e and "tile per SM" not in e:  # the two rules the change lifts: layout and tiles < SMs
            continue
        aligned = all((x * 2) % 16 == 0 for x in (p["k"], p["n"]))  # TMA rows (A, B or w, C)
        if aligned:
            items.append(("cand", c))
            seen.add(S.gemm_tag(c))
    if any((x * 2) % 16 for x in (p["k"], p["n"])):
        items.append(("nopad", best["config"]))
    items += [("hand", None), ("cublas", None)]
    return p, items


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", type=int, default=14)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()

    def log(msg):
        print(f"[{time.time() - t0:6.1f}s] {msg}", flush=True)

    _patch(a.before)
    with open(FIXTURE) as f:
        rows = [json.loads(line) for line in f]
    work = [(key, *items_for(key, rows)) for key in a.shapes.split(",")]
    import torch

    meta = sweep.env_tags(torch)
    meta["before"] = a.before
    with open(os.path.join(a.out, "gemm_ab_meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    ctx = mp.get_context("spawn")
    pool = cf.ProcessPoolExecutor(a.workers, mp_context=ctx, initializer=_worker_init, initargs=(a.before,))
    futs = {key: [pool.submit(sweep._worker_task, "gemm", p, its[j : j + 3]) for j in range(0, len(its), 3)]
            for key, p, its in work}  # fmt: skip
    log(f"{len(work)} shapes, {sum(len(w[2]) for w in work)} configs")
    with open(os.path.join(a.out, "gemm_ab.jsonl"), "w") as out:
        for key, p, its in work:
            comp = {}
            for fu in futs[key]:
                comp.update(fu.result())
            res = sweep.time_problem(torch, "gemm", p, its, a.rounds, log)
            for r in res:
                r["key"] = key
                r["compile"] = comp.get(r["tag"])
                out.write(json.dumps(r) + "\n")
            out.flush()
            cb = next((r["ms"] for r in res if r["source"] == "cublas" and "ms" in r), None)
            summary = ", ".join(
                f"{r['tag']} {r['ms'] * 1e3:.1f}" if "ms" in r else f"{r['tag']} ERR {r.get('error', '')[:60]}"
                for r in res
            )
            log(f"{key} cublas {cb * 1e3 if cb else float('nan'):.1f} us: {summary}")
            torch.cuda.empty_cache()
    pool.shutdown(wait=False, cancel_futures=True)
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
