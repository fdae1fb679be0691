"""GPU round for area `moe`: full-size correctness (bf16 + fp16), a config sweep side by side with
torch._grouped_mm (binary search vs tile map, swap, TMA, flatten), the MoE layer vs torch.

    PYTHONPATH=src OUT_AREA=/tmp/out python benchmarks/gpu/queue/moe_gpu.py [--budget 200] [--phases c,s,m,b]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

import torch
from triton.testing import do_bench

from tilewise.bench.suites import grouped as G
from tilewise.bench.suites import moe as M
from tilewise.kernels.grouped_gemm import GroupedConfig as C
from tilewise.kernels.grouped_gemm import grouped_matmul
from tilewise.kernels.moe_layer import moe, moe_reference, permute, route

T0 = time.time()
OUT = os.environ.get("OUT_AREA", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
DEV = os.environ.get("MOE_DEV", "cuda")
CORRECT_SHAPE = (128, 2048, 1536, 64, 3000)  # E, K, N, max random rows, rows of the big expert
CORRECT_DTYPES = (torch.bfloat16,)
CORRECT_MOE = (("qwen3_t512", 256), ("dsv3_t512", 64))
RESULTS: dict = {"correct": [], "sweep": [], "moe": [], "errors": []}


def el() -> float:
    return time.time() - T0


def save():
    with open(os.path.join(OUT, "moe_round.json"), "w") as f:
        json.dump(RESULTS, f, indent=1)


def rel_err(y, ref):
    y = y.float()
    ref = ref.float()
    return float((y - ref).abs().max() / ref.abs().max().clamp_min(1e-6))


# ------------------------------------------------------------------------- correctness
def correctness():
    torch.manual_seed(0)
    for dtype in CORRECT_DTYPES:
        # skewed counts incl. empty experts and a huge one, full-size K, N
        E, K, N, rmax, big = CORRECT_SHAPE
        counts = torch.randint(0, rmax, (E,)).tolist()
        for z in (3, 17, 64, 100):
            counts[z % E] = 0
        counts[5] = big
        cfgs = [
            None,
            C(16, 128, 128, 4, 4, **INL),
            C(16, 128, 128, 4, 4, **P2),
            C(128, 256, 64, 8, 3, **INL),
            C(128, 256, 64, 8, 3, tma=True),
        ]
        for cfg in cfgs if dtype == torch.bfloat16 else cfgs[:2]:
            try:
                (x, w), off = G.make_inputs(counts, K, N, dtype)
                y = torch.full((x.shape[0], N), float("nan"), device=DEV, dtype=x.dtype)
                grouped_matmul(x, w, off, out=y, config=cfg)
                ref = torch.empty(x.shape[0], N, device=DEV, dtype=torch.float32)
                s = 0
                for e, c in enumerate(counts):
                    ref[s : s + c] = x[s : s + c].float() @ w[e].float()
                    s += c
                err = rel_err(y, ref)
                tg = rel_err(torch._grouped_mm(x, w, offs=off), ref) if dtype == torch.bfloat16 else None
                ok = (not torch.isnan(y).any().item()) and err < (2e-2 if dtype == torch.bfloat16 else 4e-3)
                RESULTS["correct"].append(
                    dict(
                        what="grouped",
                        dtype=str(dtype),
                        cfg=cfg.key() if cfg else "default",
                        rel_err=err,
                        torch_rel_err=tg,
                        ok=ok,
                    )
                )
                print(
                    f"[{el():5.0f}s] correct grouped {dtype} {cfg.key() if cfg else 'default'}: rel_err {err:.2e} (torch {tg}) {'OK' if ok else 'FAIL'}"
                )
            except Exception as ex:
                RESULTS["errors"].append(dict(what="correct", cfg=str(cfg), err=traceback.format_exc()[-2000:]))
                print(f"[{el():5.0f}s] correct grouped {dtype} {cfg}: ERROR {ex!r}"[:400])
        # the trace at full size: every tile once, in the model's order
        try:
            from tilewise.model import waves

            cfg = C(16, 128, 128, 4, 4)
            _, tr = grouped_matmul(x, w, off, config=cfg, trace=True)
            sch = waves.grouped_schedule(counts, 16, N, 128)
            tr = tr[: sch.total_tiles].cpu().tolist()
            P = torch.cuda.get_device_properties(0).multi_processor_count
            bad = 0
            for t in range(sch.total_tiles):
                e, loc = waves.tile_owner(sch.prefix, t)
                mt, nt = waves.local_tile_coords(sch, e, loc)
                if tr[t] != [t % P, e, mt, nt]:
                    bad += 1
            print(f"[{el():5.0f}s] trace: {sch.total_tiles} tiles, {bad} differ from model.waves")
            RESULTS["correct"].append(dict(what="trace", tiles=sch.total_tiles, bad=bad, ok=bad == 0))
        except Exception:
            RESULTS["errors"].append(dict(what="trace", err=traceback.format_exc()[-2000:]))
        del x, w
    moe_correct()


def moe_correct():
    """MoE layer at full width, small T, bf16 and fp16 vs a float32 reference on the GPU."""
    for name, T in CORRECT_MOE:
        for dtype in (torch.bfloat16, torch.float16):
            try:
                x, lg, wgu, wd, k, gate = M.make_inputs(name, dtype)
                x = x[:T].contiguous()
                lg = lg[:T].contiguous()
                y = moe(x, lg, wgu, wd, k, gate=gate)
                ref = moe_reference(x, lg, wgu, wd, k, gate=gate, dtype=torch.float32)
                pt = M.moe_torch(x, lg, wgu, wd, k, gate) if dtype == torch.bfloat16 else None
                err = rel_err(y, ref)
                terr = rel_err(pt, ref) if pt is not None else None
                ok = (not torch.isnan(y).any().item()) and err < (3e-2 if dtype == torch.bfloat16 else 5e-3)
                RESULTS["correct"].append(
                    dict(what="moe", name=name, T=T, dtype=str(dtype), rel_err=err, torch_rel_err=terr, ok=ok)
                )
                print(
                    f"[{el():5.0f}s] correct moe {name} T{T} {dtype}: rel_err {err:.2e} (torch impl {terr}) {'OK' if ok else 'FAIL'}"
                )
                del x, lg, wgu, wd
            except Exception as ex:
                RESULTS["errors"].append(dict(what="moe-correct", name=name, err=traceback.format_exc()[-2000:]))
                print(f"[{el():5.0f}s] correct moe {name}: ERROR {ex!r}"[:400])
    torch.cuda.empty_cache()
    save()


# ------------------------------------------------------------------------------- sweep
F = dict(tma=True, flatten=True)
INL = dict(tma=True, flatten=True, schedule="inline")
S = dict(tma=True, flatten=True, schedule="search")
P2 = dict(tma=True, flatten=True, programs_per_sm=2)
SWEEP = {
    "e128_r8": [
        C(16, 128, 128, 4, 4, **F),
        C(16, 128, 128, 4, 4, **INL),
        C(16, 128, 128, 4, 4, **S),
        C(16, 128, 128, 4, 4, **P2),
        C(16, 256, 128, 4, 3, **F),
        C(16, 128, 128, 4, 4, **F),
        C(16, 128, 128, 4, 4, **INL),
    ],
    "e128_r16": [C(16, 128, 128, 4, 4, **F), C(16, 128, 128, 4, 4, **INL), C(16, 128, 128, 4, 4, **P2)],
    "e128_r32": [
        C(32, 128, 128, 4, 4, **F),
        C(32, 128, 128, 4, 4, **INL),
        C(32, 128, 128, 4, 4, **P2),
        C(32, 256, 64, 4, 3, **F),
        C(32, 128, 64, 4, 4, **P2),
    ],
    "e128_r64": [
        C(64, 256, 64, 8, 3, **F),
        C(64, 256, 64, 8, 3, **INL),
        C(64, 128, 64, 4, 4, **P2),
        C(64, 256, 64, 8, 4, **F),
    ],
    "e128_r128": [
        C(128, 256, 64, 8, 3, **F),
        C(128, 256, 64, 8, 3, **INL),
        C(128, 256, 64, 8, 3, **S),
        C(128, 256, 64, 8, 4, **F),
        C(128, 128, 128, 8, 3, **F),
        C(128, 256, 64, 8, 3, **F),
        C(128, 256, 64, 8, 3, **INL),
        C(128, 256, 64, 8, 3, **S),
    ],
    "e16_r1024": [
        C(128, 256, 64, 8, 3, tma=True),
        C(128, 256, 64, 8, 4, tma=True),
        C(256, 128, 64, 8, 3, tma=True),
        C(128, 256, 64, 8, 3, tma=True, schedule="inline"),
    ],
    "e128_zipf": [C(128, 256, 64, 8, 3, **F), C(128, 256, 64, 8, 3, **INL), C(128, 128, 64, 8, 4, **F)],
    "e256_r16": [C(16, 128, 128, 4, 4, **F), C(16, 128, 128, 4, 4, **INL), C(16, 128, 128, 4, 4, **P2)],
    "e256_r64": [C(64, 256, 64, 8, 3, **F), C(64, 256, 64, 8, 3, **INL), C(128, 256, 64, 8, 3, **F)],
}
# MoE layer: (up config, down config) pairs; None = moe_configs' choice
MOE_SWEEP = {
    "qwen3_t4096": [
        None,
        (C(128, 128, 64, 8, 3, **F), C(128, 256, 64, 8, 3, **F)),
        (C(128, 128, 64, 8, 3, tma=True, schedule="inline"), C(128, 256, 64, 8, 3, **INL)),
    ],
    "dsv3_t4096": [
        None,
        (C(128, 128, 64, 8, 3, **F), C(128, 256, 64, 8, 3, **F)),
    ],
    "qwen3_t512": [
        None,
        (C(32, 128, 64, 4, 3, **F), C(32, 256, 64, 4, 3, **F)),
        (C(32, 64, 128, 4, 4, **INL), C(32, 128, 128, 4, 4, **INL)),
    ],
    "dsv3_t512": [
        None,
        (C(16, 64, 128, 4, 4, **F), C(16, 128, 128, 4, 4, **F)),
        (C(16, 128, 64, 4, 4, **INL), C(16, 128, 128, 4, 4, **INL)),
    ],
}


def launch_overhead():
    """CPU cost of one call (tiny problem, so the GPU waits on the CPU): per config and for moe()."""
    counts = [8] * 8
    (x, w), off = G.make_inputs(counts, 256, 256, torch.bfloat16)
    y = torch.empty(x.shape[0], 256, device=DEV, dtype=x.dtype)
    for cfg in (
        C(16, 128, 128, 4, 4, **F),
        C(16, 128, 128, 4, 4, **INL),
        C(16, 128, 128, 4, 4, flatten=True),
        C(16, 128, 128, 4, 4, flatten=True, schedule="inline"),
    ):
        fn = lambda cfg=cfg: grouped_matmul(x, w, off, out=y, config=cfg, check_offsets=False)
        cpu = cpu_per_call(fn)
        print(f"[{el():5.0f}s] LAUNCH grouped_matmul {cfg.key():36s} {cpu:6.1f} us per call (CPU)")
        RESULTS.setdefault("launch", []).append(dict(what="grouped_matmul", cfg=cfg.key(), cpu_us=cpu))
    xm = torch.randn(64, 256, device=DEV, dtype=torch.bfloat16)
    lg = torch.randn(64, 8, device=DEV)
    wgu = torch.randn(8, 256, 256, device=DEV, dtype=torch.bfloat16)
    wd = torch.randn(8, 128, 256, device=DEV, dtype=torch.bfloat16)
    for label, fn in (
        ("moe (ours)", lambda: moe(xm, lg, wgu, wd, 2)),
        ("moe_torch (peer)", lambda: M.moe_torch(xm, lg, wgu, wd, 2)),
        ("route+permute", lambda: permute(route(lg, 2)[1], 8)),
        ("torch._grouped_mm", lambda: torch._grouped_mm(x, w, offs=off)),
    ):
        cpu = cpu_per_call(fn)
        print(f"[{el():5.0f}s] LAUNCH {label:50s} {cpu:6.1f} us per call (CPU)")
        RESULTS.setdefault("launch", []).append(dict(what=label, cpu_us=cpu))
    save()


def cpu_per_call(fn, n=200):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    dt = time.perf_counter() - t
    torch.cuda.synchronize()
    return dt / n * 1e6


def profile(names):
    """Per-kernel device time of ours and the torch peer (torch.profiler), top kernels."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprof

    for name in names:
        profile_one(name, tprof, ProfilerActivity)
        torch.cuda.empty_cache()
    save()


def profile_one(name, tprof, ProfilerActivity):
    if True:
        try:
            x, lg, wgu, wd, k, gate = M.make_inputs(name, torch.bfloat16)
            for label, fn in (
                ("ours", lambda: moe(x, lg, wgu, wd, k, gate=gate)),
                ("torch", lambda: M.moe_torch(x, lg, wgu, wd, k, gate)),
            ):
                for _ in range(3):
                    fn()
                torch.cuda.synchronize()
                t = time.perf_counter()
                for _ in range(10):
                    fn()
                cpu_issue = (time.perf_counter() - t) / 10
                torch.cuda.synchronize()
                wall = (time.perf_counter() - t) / 10
                with tprof(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(5):
                        fn()
                    torch.cuda.synchronize()
                evs = prof.key_averages()
                rows = []
                for e in evs:
                    dt = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
                    rows.append((dt / 5, e.count // 5, e.key[:70]))
                rows.sort(reverse=True)
                tot = sum(r[0] for r in rows)
                print(
                    f"[{el():5.0f}s] PROFILE {name} {label}: device {tot:.0f} us/call, wall {wall * 1e6:.0f} us, cpu issue {cpu_issue * 1e6:.0f} us"
                )
                RESULTS.setdefault("profile", []).append(
                    dict(
                        name=name,
                        side=label,
                        device_us=tot,
                        wall_us=wall * 1e6,
                        cpu_issue_us=cpu_issue * 1e6,
                        kernels=rows[:14],
                    )
                )
                for r in rows[:10]:
                    print(f"      {r[0]:8.1f} us x{r[1]}  {r[2]}")
        except Exception as ex:
            RESULTS["errors"].append(dict(what="profile", name=name, err=traceback.format_exc()[-2000:]))
            print(f"[{el():5.0f}s] profile {name}: ERROR {str(ex)[:300]!r}")


def moe_sweep(budget, names):
    for name in names:
        if el() > budget:
            print(f"[{el():5.0f}s] budget reached; skipping moe {name}")
            continue
        moe_sweep_one(name, budget)
        torch.cuda.empty_cache()
        save()


def moe_sweep_one(name, budget):
    x, lg, wgu, wd, k, gate = M.make_inputs(name, torch.bfloat16)
    peer = do_bench(lambda: M.moe_torch(x, lg, wgu, wd, k, gate), warmup=10, rep=100, return_mode="median")
    ref = M.moe_torch(x, lg, wgu, wd, k, gate)
    print(f"[{el():5.0f}s] moe {name}: torch {peer * 1e3:.1f} us")
    for cfgs in MOE_SWEEP[name]:
        if el() > budget + 15:
            break
        label = "default" if cfgs is None else cfgs[0].key() + " | " + cfgs[1].key()
        try:
            y = moe(x, lg, wgu, wd, k, gate=gate, configs=cfgs)
            err = rel_err(y, ref)
            t = do_bench(
                lambda cfgs=cfgs: moe(x, lg, wgu, wd, k, gate=gate, configs=cfgs),
                warmup=10,
                rep=100,
                return_mode="median",
            )
            RESULTS["moe"].append(
                dict(name=name, cfg=label, ours_us=t * 1e3, torch_us=peer * 1e3, speedup=peer / t, err=err)
            )
            print(f"[{el():5.0f}s]   {label:80s} {t * 1e3:8.1f} us x{peer / t:5.2f} err {err:.1e}")
        except Exception as ex:
            RESULTS["errors"].append(dict(what="moe-sweep", name=name, cfg=label, err=traceback.format_exc()[-2000:]))
            print(f"[{el():5.0f}s]   {label}: ERROR {str(ex)[:300]!r}")


def sweep(budget: float, shapes):
    for name in shapes:
        if el() > budget:
            print(f"[{el():5.0f}s] budget reached; skipping {name}")
            continue
        sweep_shape(name, budget)
        torch.cuda.empty_cache()
        save()


def sweep_shape(name, budget):
    if True:
        counts, K, N = G.shape_counts(name)
        (x, w), off = G.make_inputs(counts, K, N, torch.bfloat16)
        E = len(counts)
        wbytes = E * K * N * 2
        ref = torch._grouped_mm(x, w, offs=off)
        tp = do_bench(lambda: torch._grouped_mm(x, w, offs=off), warmup=10, rep=60)
        print(f"[{el():5.0f}s] {name}: torch._grouped_mm {tp * 1e3:.1f} us ({wbytes / tp / 1e9:.2f} TB/s weights)")
        best = None
        for cfg in SWEEP[name]:
            if el() > budget + 20:
                break
            try:
                y = torch.full_like(ref, float("nan"))
                grouped_matmul(x, w, off, out=y, config=cfg, check_offsets=False)
                err = rel_err(y, ref)
                t = do_bench(
                    lambda y=y, cfg=cfg: grouped_matmul(x, w, off, out=y, config=cfg, check_offsets=False),
                    warmup=10,
                    rep=60,
                )
                r = dict(
                    shape=name,
                    cfg=cfg.key(),
                    us=t * 1e3,
                    torch_us=tp * 1e3,
                    speedup=tp / t,
                    weight_tbps=wbytes / t / 1e9,
                    tflops=2 * sum(counts) * K * N / t / 1e9,
                    err=err,
                )
                RESULTS["sweep"].append(r)
                print(
                    f"[{el():5.0f}s]   {cfg.key():40s} {t * 1e3:8.1f} us  x{tp / t:5.2f}  {wbytes / t / 1e9:5.2f} TB/s  {r['tflops']:6.1f} TFLOP/s  err {err:.1e}"
                )
                if err < 2e-2 and (best is None or t < best[0]):
                    best = (t, cfg.key())
            except Exception as ex:
                RESULTS["errors"].append(
                    dict(what="sweep", shape=name, cfg=cfg.key(), err=traceback.format_exc()[-2000:])
                )
                print(f"[{el():5.0f}s]   {cfg.key():40s} ERROR {str(ex)[:200]!r}")
        if best:
            print(
                f"[{el():5.0f}s] BEST {name}: {best[1]} {best[0] * 1e3:.1f} us  x{tp / best[0]:.2f} vs torch._grouped_mm"
            )


def moe_timing(budget: float, names):
    for name in names:
        if el() > budget:
            continue
        moe_one(name)
        torch.cuda.empty_cache()
    save()


def moe_one(name):
    if True:
        try:
            x, lg, wgu, wd, k, gate = M.make_inputs(name, torch.bfloat16)
            ours = do_bench(lambda: moe(x, lg, wgu, wd, k, gate=gate), warmup=10, rep=60)
            peer = do_bench(lambda: M.moe_torch(x, lg, wgu, wd, k, gate), warmup=10, rep=60)
            RESULTS["moe"].append(dict(name=name, ours_us=ours * 1e3, torch_us=peer * 1e3, speedup=peer / ours))
            print(f"[{el():5.0f}s] moe {name}: ours {ours * 1e3:.1f} us, torch {peer * 1e3:.1f} us, x{peer / ours:.2f}")
        except Exception as ex:
            RESULTS["errors"].append(dict(what="moe", name=name, err=traceback.format_exc()[-2000:]))
            print(f"[{el():5.0f}s] moe {name}: ERROR {str(ex)[:300]!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=120)
    ap.add_argument("--phases", default="m,b,l,x")
    ap.add_argument("--shapes", default=",".join(SWEEP))
    ap.add_argument("--moe", default=",".join(MOE_SWEEP))
    ap.add_argument("--profile", default="qwen3_t4096,qwen3_t512")
    a = ap.parse_args()
    print(torch.__version__, torch.cuda.get_device_name(0), file=sys.stderr)
    for phase in a.phases.split(","):  # in the order given
        if phase == "c":
            correctness()
        elif phase == "m":
            moe_correct()
        elif phase == "p":
            profile(a.profile.split(","))
        elif phase == "x":
            moe_sweep(a.budget * 0.8, a.moe.split(","))
        elif phase == "s":
            sweep(a.budget * 0.75, a.shapes.split(","))
        elif phase == "l":
            launch_overhead()
        elif phase == "b" and el() < a.budget:
            import moe_bench

            sys_argv = sys.argv
            sys.argv = ["moe_bench.py"]
            try:
                moe_bench.main()
            except Exception:
                RESULTS["errors"].append(dict(what="bench", err=traceback.format_exc()[-2000:]))
                print("bench ERROR", traceback.format_exc()[-1500:])
            sys.argv = sys_argv
    print("\n==== SUMMARY ====")
    for r in RESULTS["correct"]:
        if not r.get("ok"):
            print("FAILED:", r)
    print(
        f"correct: {sum(1 for r in RESULTS['correct'] if r.get('ok'))}/{len(RESULTS['correct'])} ok; errors: {len(RESULTS['errors'])}"
    )
    byshape: dict = {}
    for r in RESULTS["sweep"]:
        if r["err"] < 2e-2 and (r["shape"] not in byshape or r["us"] < byshape[r["shape"]]["us"]):
            byshape[r["shape"]] = r
    for sh, r in byshape.items():
        print(
            f"best {sh:10s} {r['cfg']:40s} {r['us']:8.1f} us x{r['speedup']:.2f} {r['weight_tbps']:.2f} TB/s {r['tflops']:.0f} TFLOP/s"
        )
    best_moe: dict = {}
    for r in RESULTS["moe"]:
        if r.get("err", 0) < 3e-2 and (r["name"] not in best_moe or r["ours_us"] < best_moe[r["name"]]["ours_us"]):
            best_moe[r["name"]] = r
    for n, r in best_moe.items():
        print(f"best moe {n}: {r.get('cfg')} x{r['speedup']:.2f} ({r['ours_us']:.0f} vs {r['torch_us']:.0f} us)")
    for e in RESULTS["errors"][:3]:
        print("ERR", e.get("what"), e.get("cfg", e.get("name")), e["err"][-600:])
    print(f"total {el():.0f}s")
    save()


if __name__ == "__main__":
    main()
