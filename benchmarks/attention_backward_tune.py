"""Tile and dQ-mode search for the flash attention backward on the GPU (one call, compiles in parallel).

    python3 benchmarks/attention_backward_tune.py --out $OUT [--workers 14]

What it measures (rows to attention_backward_tune.json):
1. compile: every variant below is compiled and run once by a pool of worker processes (Triton's disk cache
   then serves the timing process); each run's dQ, dK, dV are compared with cuDNN SDPA's gradients
   (`err`: max |ours - cudnn| / max |cudnn| per gradient), so a tile that computes wrong is never chosen;
2. tiles: per (head dim, mask) problem of the attention sweep, CUDA-graph replays of every variant timed in
   alternating rounds (`tilewise.bench.timing.time_calls`, L2 flushed): dK/dV tiles with the atomic dQ, dK/dV tiles
   without it (dQ by the second kernel at its current tile), and the second kernel's tiles (dK/dV at its current
   tile). The separate mode's time is the sum of its two kernels, so the best of each is taken apart;
3. modes: the best atomic configuration against the best separate one on every problem of the sweep
   (`tilewise.bench.suites.attention.SWEEP`), with cuDNN SDPA's backward as a third side in the same rounds.
The choice (per head dim: the tiles with the least summed time over that head dim's problems, and the dQ mode
faster on most of the sweep) goes into `meta.choice`; the kernel's constants are set from it by hand, with the
figures that chose them.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import time
import traceback

PROBLEMS = [  # (B, H, Hkv, S, D, causal): one sweep problem per (head dim, mask) the sweep has
    (4, 32, 32, 4096, 64, False),
    (4, 32, 32, 1024, 64, True),
    (1, 32, 32, 8192, 128, False),
    (1, 32, 32, 8192, 128, True),
    (2, 16, 16, 4096, 256, True),
]
# dK/dV tiles (block_m, block_n, warps, stages); the first of each list is the shipped rule's
DKDV = {
    64: [(64, 128, 8, 2), (128, 128, 8, 2), (32, 128, 4, 3), (64, 128, 4, 3), (32, 128, 4, 5), (64, 64, 4, 3),
         (128, 128, 8, 3), (64, 128, 8, 3)],
    128: [(64, 128, 8, 2), (32, 128, 8, 2), (32, 128, 4, 3), (64, 128, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3),
          (32, 128, 4, 5), (64, 128, 4, 2)],
    256: [(64, 64, 8, 1), (32, 64, 8, 2), (64, 64, 8, 2), (32, 64, 4, 2), (64, 32, 4, 2), (32, 128, 8, 1),
          (64, 128, 8, 1), (32, 32, 4, 3)],
}  # fmt: skip
# the dQ kernel's tiles (block_m, block_n, warps, stages)
DQ = {
    64: [(128, 64, 8, 2), (128, 32, 4, 3), (128, 64, 8, 3), (64, 64, 4, 3), (128, 128, 8, 2), (64, 128, 4, 2),
         (128, 32, 8, 4)],
    128: [(128, 64, 8, 2), (128, 32, 4, 3), (128, 64, 8, 3), (64, 64, 4, 3), (128, 128, 8, 2), (64, 128, 8, 2),
          (128, 32, 8, 4)],
    256: [(64, 64, 8, 2), (64, 64, 8, 1), (64, 32, 4, 2), (128, 32, 8, 2), (32, 64, 4, 2), (64, 32, 8, 3),
          (128, 64, 8, 1)],
}  # fmt: skip


def variants(d: int) -> list[tuple[str, tuple, tuple]]:
    """(kind, dkdv tile, dq tile): the three families of step 2."""
    dq0, kv0 = DQ[d][0], DKDV[d][0]
    out = [("atomic", t, dq0) for t in DKDV[d]]
    out += [("separate-dkdv", t, dq0) for t in DKDV[d]]
    out += [("separate-dq", kv0, t) for t in DQ[d]]  # its first row repeats one of the family above: the noise
    return out


def config(kind: str, kv: tuple, dq: tuple):
    from tilewise.kernels import attention_backward as ab

    return ab.BackwardConfig(*kv, *dq, dq="atomic" if kind == "atomic" else "separate")


def inputs(b, h, hk, s, d):
    """Seeded bf16 inputs, drawn on the CPU: a CUDA-graph capture that fails leaves the CUDA generator unusable for
    the rest of the process, and the next problem's inputs must not depend on it."""
    import torch

    g = torch.Generator().manual_seed(0)
    q, k, v, d_out = (torch.randn(*shape, generator=g, dtype=torch.bfloat16).cuda()
                      for shape in ((b, h, s, d), (b, hk, s, d), (b, hk, s, d), (b, h, s, d)))  # fmt: skip
    return q, k, v, d_out


_REF: dict = {}


def cudnn(q, k, v, causal):
    """cuDNN SDPA's output (its autograd graph the peer's backward); GQA through enable_gqa, else K/V repeated."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        if k.shape[1] == q.shape[1]:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        try:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        except RuntimeError:
            g = q.shape[1] // k.shape[1]
            kr, vr = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
            return F.scaled_dot_product_attention(q, kr, vr, is_causal=causal)


def prepared(p):
    """Inputs, the forward's (out, lse) and cuDNN's gradients for problem p (cached per process)."""
    import torch

    from tilewise.kernels import flash_attention as fa

    if p not in _REF:
        _REF.clear()
        torch.cuda.empty_cache()
        b, h, hk, s, d, causal = p
        q, k, v, d_out = inputs(b, h, hk, s, d)
        out, lse = fa.attention(q, k, v, causal=causal)
        qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
        ref = torch.autograd.grad(cudnn(qg, kg, vg, causal), (qg, kg, vg), d_out)
        _REF[p] = (q, k, v, d_out, out, lse, ref)
    return _REF[p]


def compile_job(job):
    """Worker: compile and run one (problem, variant) once; its error against cuDNN's gradients."""
    p, kind, kv, dq = job
    t0 = time.time()
    try:
        import torch

        from tilewise.kernels import attention_backward as ab

        q, k, v, d_out, out, lse, ref = prepared(p)
        got = ab.attention_backward(d_out, q, k, v, out, lse, causal=p[5], config=config(kind, kv, dq))
        torch.cuda.synchronize()
        err = [float((a.float() - r.float()).abs().max() / r.float().abs().max()) for a, r in zip(got, ref)]
        return {"job": job, "ok": all(e < 3e-2 for e in err), "err": err, "s": round(time.time() - t0, 1)}
    except Exception as e:
        return {
            "job": job,
            "ok": False,
            "error": f"{type(e).__name__}: {str(e)[:200]}",
            "s": round(time.time() - t0, 1),
        }


def graph_of(p, cfg):
    from tilewise.bench import timing
    from tilewise.kernels import attention_backward as ab

    q, k, v, d_out, out, lse, _ = prepared(p)
    return timing.capture(
        lambda i: ab.attention_backward(d_out, q, k, v, out, lse, causal=p[5], config=cfg), 1, refuse_sync=True
    )


def cudnn_graph(p):
    """A CUDA graph of cuDNN SDPA's backward on problem p's inputs (its forward outside the graph)."""
    import torch

    from tilewise.bench import timing

    q, k, v, d_out, _, _, _ = prepared(p)
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
    o = cudnn(qg, kg, vg, p[5])
    step = lambda i: torch.autograd.grad(o, (qg, kg, vg), d_out, retain_graph=True)
    return timing.capture(step, 1, warmup=1, refuse_sync=True)


def time_sides(sides, rounds, budget_ms):
    from tilewise.bench import timing

    reps = max(3, min(30, int(budget_ms / max(0.05, min(timing.time_calls({"x": g}, rounds=1, reps=2)["x"].median_ms
                                                             for g in sides.values())))))  # fmt: skip
    return {n: t.median_ms for n, t in timing.time_calls(sides, rounds=rounds, reps=reps).items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--workers", type=int, default=14)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    t0 = time.time()
    jobs = [(p, kind, kv, dq) for p in PROBLEMS for kind, kv, dq in variants(p[4])]
    with mp.get_context("spawn").Pool(args.workers) as pool:
        compiled = pool.map(compile_job, sorted(jobs, key=lambda j: j[0]), chunksize=2)
    print(f"compiled {len(jobs)} variants at +{time.time() - t0:.0f}s", flush=True)

    import torch

    from tilewise.bench import harness, shapes
    from tilewise.bench.suites.attention import SWEEP
    from tilewise.kernels import attention_backward as ab

    tags = harness.env_tags()
    rows: list[dict] = []
    ok = {r["job"] for r in compiled if r["ok"]}
    for r in compiled:
        p, kind, kv, dq = r["job"]
        rows.append({"section": "compile", "shape": shapes.attention_name(*p), "kind": kind, "dkdv": list(kv),
                     "dq_tile": list(dq), **{k: r[k] for k in ("ok", "err", "error", "s") if k in r}, **tags})  # fmt: skip
        if not r["ok"]:
            print(rows[-1], flush=True)
    path = os.path.join(args.out, "attention_backward_tune.json")

    # 2. tiles, per problem
    for p in PROBLEMS:
        try:
            sides = {}
            for kind, kv, dq in variants(p[4]):
                if (p, kind, kv, dq) in ok:
                    sides[(kind, kv, dq)] = graph_of(p, config(kind, kv, dq))
            ms = time_sides(sides, args.rounds, 8.0)
            for (kind, kv, dq), t in ms.items():
                rows.append({"section": "tiles", "shape": shapes.attention_name(*p), "head_dim": p[4],
                             "causal": p[5], "kind": kind, "dkdv": list(kv), "dq_tile": list(dq), "graph_ms": t,
                             **tags})  # fmt: skip
            best = sorted(ms.items(), key=lambda kt: kt[1])[:6]
            print(shapes.attention_name(*p), [(k, round(t, 3)) for k, t in best], flush=True)
            del sides
        except Exception:
            rows.append(
                {"section": "tiles", "shape": shapes.attention_name(*p), "error": traceback.format_exc()[-800:]}
            )
            print(rows[-1]["error"], flush=True)
        _REF.clear()
        torch.cuda.empty_cache()
    harness.write_rows(path, rows, meta={**tags, "partial": True})

    # the choice per head dim: the least mean time over that head dim's problems, each problem's times divided by
    # the family's best on it (so a long problem does not outvote a short one)
    choice = {}
    for d in DKDV:
        tr = [r for r in rows if r.get("section") == "tiles" and r.get("head_dim") == d and "graph_ms" in r]

        def score(kind, key, tr=tr):
            per = {}
            for r in tr:
                if r["kind"] == kind:
                    base = min(x["graph_ms"] for x in tr if x["shape"] == r["shape"] and x["kind"] == kind)
                    per.setdefault(tuple(r[key]), []).append(r["graph_ms"] / base)
            n = max(len(v) for v in per.values())
            return min((statistics.mean(v), t) for t, v in per.items() if len(v) == n)[1]

        choice[d] = {"atomic": score("atomic", "dkdv"), "separate_dkdv": score("separate-dkdv", "dkdv"),
                     "separate_dq": score("separate-dq", "dq_tile")}  # fmt: skip
        print(d, choice[d], flush=True)

    # 3. modes on every sweep problem, cuDNN beside
    for p in SWEEP:
        d = p[4]
        try:
            c = choice[d]
            sq, dq_t = c["separate_dkdv"], c["separate_dq"]
            cfgs = {"atomic": config("atomic", c["atomic"], DQ[d][0]), "separate": config("separate", sq, dq_t)}
            sides = {m: graph_of(p, cfg) for m, cfg in cfgs.items()}
            try:
                sides["cudnn"] = cudnn_graph(p)
            except Exception as e:  # the row keeps our two modes
                print(f"cudnn not captured: {type(e).__name__}: {str(e)[:200]}", flush=True)
            ms = time_sides(sides, args.rounds, 20.0)
            rows.append({"section": "modes", "shape": shapes.attention_name(*p), "head_dim": d,
                         "atomic_tile": list(c["atomic"]), "separate_tiles": [list(sq), list(dq_t)],
                         "atomic_ms": ms["atomic"], "separate_ms": ms["separate"], "cudnn_ms": ms.get("cudnn"),
                         "separate_over_atomic": ms["separate"] / ms["atomic"], **tags})  # fmt: skip
            print({k: rows[-1][k] for k in ("shape", "atomic_ms", "separate_ms", "cudnn_ms")}, flush=True)
            del sides
        except Exception:
            rows.append(
                {"section": "modes", "shape": shapes.attention_name(*p), "error": traceback.format_exc()[-800:]}
            )
            print(rows[-1]["error"], flush=True)
        _REF.clear()
        torch.cuda.empty_cache()
    modes = [r for r in rows if r.get("section") == "modes" and "atomic_ms" in r]
    meta = {**tags, "choice": {str(d): {k: list(v) for k, v in c.items()} for d, c in choice.items()},
            "separate_wins": sum(r["separate_ms"] < r["atomic_ms"] for r in modes), "problems": len(modes),
            "elapsed_s": round(time.time() - t0, 1), "triton": __import__("triton").__version__,
            "torch": torch.__version__, "kernel": ab.__name__}  # fmt: skip
    harness.write_rows(path, rows, meta=meta)
    print(meta, flush=True)


if __name__ == "__main__":
    main()
