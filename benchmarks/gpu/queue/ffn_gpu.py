"""GPU rounds for area `ffn` (issue 8): FlashFFN correctness at full size (bf16 and fp16, forward and
backward), config sweeps of the three kernels, then benchmark rows side by side with the unfused layer,
the dense SwiGLU and (MH-MoE) torch._grouped_mm.

Run from the repo root with PYTHONPATH=src:
    ROUND=1 BUDGET_S=225 python3 benchmarks/gpu/queue/ffn_gpu.py
Writes $OUT_AREA/round$ROUND.json (checks and sweeps) and $OUT_AREA/ffn*.json (rows, harness.write_rows).
"""

import json
import os
import time
import traceback

import torch
import triton
from triton.testing import do_bench

from tilewise.bench import harness
from tilewise.bench.suites import ffn as suite
from tilewise.kernels import ffn as ff

T0 = time.time()
BUDGET = float(os.environ.get("BUDGET_S", "225"))
ROUND = os.environ.get("ROUND", "1")
SECTIONS = os.environ.get("SECTIONS", "check,sweep,bench,moe").split(",")
DEV = os.environ.get("DEVICE", "cuda")
SWEEP_T = int(os.environ.get("SWEEP_T", "16384"))
SWEEP_I = int(os.environ.get("SWEEP_I", "512"))
OUT = os.environ.get("OUT_AREA", "/tmp/ffn_out")
os.makedirs(OUT, exist_ok=True)
torch.backends.cuda.matmul.allow_tf32 = False
res = {
    "env": dict(
        torch=torch.__version__,
        triton=triton.__version__,
        gpu=torch.cuda.get_device_name(0) if DEV == "cuda" else "cpu",
    )
}
print(res["env"], flush=True)
suite.DEVICE = DEV
TAGS = harness.env_tags(f"ROUND={ROUND} python3 benchmarks/gpu/queue/ffn_gpu.py (tilewise bench ffn)")


def left():
    return BUDGET - (time.time() - T0)


def save():
    json.dump(res, open(os.path.join(OUT, f"round{ROUND}.json"), "w"), indent=1)


def ms(fn, rep=25):
    return do_bench(fn, warmup=5, rep=rep, return_mode="median")


def rel(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30)).item()


def data(T, H, d, n, dt, seed=0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    z = torch.randn(T, H, d, device=DEV, dtype=dt, generator=g)
    wg = torch.randn(H, d, n, device=DEV, dtype=dt, generator=g) / d**0.5
    wu = torch.randn(H, d, n, device=DEV, dtype=dt, generator=g) / d**0.5
    wd = torch.randn(H, n, d, device=DEV, dtype=dt, generator=g) / n**0.5
    dy = torch.randn(T, H, d, device=DEV, dtype=dt, generator=g)
    return z, wg, wu, wd, dy


# ------------------------------------------------------------------ 1. correctness at full size
def check(T, H, d, n, dt, modes=("split", "atomic")):
    z, wg, wu, wd, dy = data(T, H, d, n, dt, seed=T + n)
    ref_in = [t.float().requires_grad_() for t in (z, wg, wu, wd)]
    y_ref = ff.mhffn_unfused(*ref_in)
    y_ref.backward(dy.float())
    low_in = [t.detach().clone().requires_grad_() for t in (z, wg, wu, wd)]
    y_low = ff.mhffn_unfused(*low_in)
    y_low.backward(dy)
    y = ff.flash_ffn(z, wg, wu, wd)
    out = dict(shape=f"T{T}_H{H}_dh{d}_I{n}", dtype=str(dt), y=rel(y, y_ref), y_torch_lowp=rel(y_low, y_ref))
    out["nan"] = bool(torch.isnan(y).any())
    names = ("dz", "dwg", "dwu", "dwd")
    for mode in modes:
        try:
            gs = ff._bwd(z, wg, wu, wd, dy, mode=mode)
        except Exception as e:  # one mode failing must not hide the other's numbers
            out[f"error_{mode}"] = repr(e)[:300]
            continue
        for n, gk, r in zip(names, gs, ref_in):
            out[f"{n}_{mode}"] = rel(gk, r.grad)
    for n, lo, r in zip(names, low_in, ref_in):
        out[f"{n}_torch_lowp"] = rel(lo.grad, r.grad)
    worst = max(v for k, v in out.items() if k.startswith(("y", "d")) and "lowp" not in k and isinstance(v, float))
    worst_peer = max(v for k, v in out.items() if "lowp" in k)
    out["worst"], out["worst_torch_lowp"] = worst, worst_peer
    out["ok"] = (not out["nan"]) and worst <= max(3 * worst_peer, 2e-2) and not any(k.startswith("error") for k in out)
    return out


if "check" in SECTIONS:
    res["checks"] = []
    default_checks = [
        (4099, 16, 128, 500, torch.bfloat16),
        (4097, 16, 64, 1000, torch.bfloat16),
        (16384, 16, 128, 512, torch.bfloat16),
        (333, 3, 64, 200, torch.float16),
    ]
    env_checks = os.environ.get("CHECKS")
    full = os.environ.get("CHECKS_FULL")  # TxHxDxIxDTYPE,...
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    if full:
        cases = [(*(int(v) for v in c.split("x")[:4]), dtypes[c.split("x")[4]]) for c in full.split(",")]
    elif env_checks:
        cases = [(*(int(v) for v in c.split("x")), torch.bfloat16) for c in env_checks.split(",")]
    else:
        cases = default_checks
    for c in cases:
        if time.time() - T0 > float(os.environ.get("CHECK_S", "40")):
            break
        try:
            r = check(*c)
        except Exception as e:
            r = dict(shape=str(c), error=repr(e)[:800])
            traceback.print_exc()
        res["checks"].append(r)
        print("CHECK", f"{time.time() - T0:.0f}s", json.dumps(r), flush=True)
    save()

# ------------------------------------------------------------------ 2. config sweeps
C = ff.Config
FWD = {
    128: [C(128, 64, 8, 2), C(128, 64, 8, 3), C(128, 64, 8, 4), C(128, 128, 8, 2), C(128, 32, 8, 3), C(128, 32, 4, 4),
          C(64, 64, 4, 3), C(64, 64, 4, 4), C(64, 128, 4, 2), C(128, 64, 4, 3), C(64, 32, 4, 4)],
    64: [C(128, 64, 4, 3), C(128, 64, 8, 3), C(128, 128, 8, 3), C(128, 128, 4, 3), C(64, 128, 4, 3), C(128, 256, 8, 2),
         C(64, 64, 4, 4), C(256, 64, 8, 3), C(128, 64, 4, 4)],
}  # fmt: skip
DZ = {
    128: [C(128, 64, 8, 2), C(128, 64, 8, 3), C(128, 32, 8, 3), C(64, 64, 4, 3), C(64, 128, 8, 2), C(128, 128, 8, 2),
          C(64, 32, 4, 4)],
    64: [C(128, 64, 4, 3), C(128, 64, 8, 3), C(128, 128, 8, 2), C(64, 64, 4, 3), C(64, 128, 4, 3), C(128, 32, 4, 4)],
}  # fmt: skip
DW = {
    128: [C(64, 64, 8, 2), C(64, 64, 4, 2), C(128, 64, 8, 2), C(64, 128, 8, 2), C(128, 32, 8, 2), C(32, 64, 4, 3),
          C(64, 32, 4, 3), C(64, 64, 8, 3)],
    64: [C(64, 64, 4, 2), C(64, 64, 8, 2), C(128, 64, 8, 2), C(64, 128, 8, 2), C(128, 128, 8, 2), C(64, 128, 4, 3),
         C(128, 64, 4, 3)],
}  # fmt: skip


def key(c):
    return f"m{c.block_m}n{c.block_n}w{c.num_warps}s{c.num_stages}"


def sweep_one(kind, d, T=None, H=16, n=None):
    T, n = T or SWEEP_T, n or SWEEP_I
    z, wg, wu, wd, dy = data(T, H, d, n, torch.bfloat16)
    fl = 2 * T * H * d * n  # one per-head GEMM unit
    out = []
    base_dz, base_dw = ff.bwd_configs(d)
    cands = {"fwd": FWD, "dz": DZ, "dw": DW, "dw_atomic": DW}[kind][d]
    for c in cands:
        if left() < 70:
            break
        try:
            if kind == "fwd":
                t = ms(lambda c=c: ff._fwd(z, wg, wu, wd, cfg=c))
                units = 3
            elif kind == "dz":
                t = ms(lambda c=c: ff._bwd(z, wg, wu, wd, dy, mode="split", dz_cfg=c, dw_cfg=base_dw))
                units = 11
            elif kind == "dw":
                t = ms(lambda c=c: ff._bwd(z, wg, wu, wd, dy, mode="split", dz_cfg=base_dz, dw_cfg=c))
                units = 11
            else:
                t = ms(lambda c=c: ff._bwd(z, wg, wu, wd, dy, mode="atomic", dw_cfg=c))
                units = 8
            r = dict(kind=kind, d=d, cfg=key(c), us=round(t * 1e3, 1), tflops_exec=round(units * fl / t / 1e9, 1))
        except Exception as e:
            r = dict(kind=kind, d=d, cfg=key(c), error=repr(e)[:300])
        out.append(r)
        print("SWEEP", json.dumps(r), flush=True)
    return out


def best(rows, kind, d):
    ok = [r for r in rows if r["kind"] == kind and r["d"] == d and "us" in r]
    return min(ok, key=lambda r: r["us"]) if ok else None


def cfg_of(k):
    import re

    m = re.match(r"m(\d+)n(\d+)w(\d+)s(\d+)", k)
    return C(*(int(x) for x in m.groups()))


if "sweep" in SECTIONS:
    res["sweep"] = []
    for kind in ("fwd", "dw", "dz", "dw_atomic"):
        for d in (128, 64):
            res["sweep"] += sweep_one(kind, d)
            save()
            # use the best found so far for the later sweeps and the benchmark
            b = best(res["sweep"], kind, d)
            if b and kind == "fwd":
                ff._FWD[d] = cfg_of(b["cfg"])
            elif b and kind == "dz":
                ff._BWD_DZ[d] = cfg_of(b["cfg"])
            elif b and kind == "dw":
                ff._BWD_DW[d] = cfg_of(b["cfg"])
    summary = {}
    for d in (128, 64):
        bs = {k: best(res["sweep"], k, d) for k in ("fwd", "dz", "dw", "dw_atomic")}
        summary[d] = {k: (v["cfg"], v["us"]) if v else None for k, v in bs.items()}
        split_us = bs["dz"]["us"] if bs["dz"] else None
        atom_us = bs["dw_atomic"]["us"] if bs["dw_atomic"] else None
        if split_us and atom_us and atom_us < split_us:
            summary[d]["mode"] = "atomic"
            if d == 128:  # one mode for all head dims (the one that wins at d_h = 128): its dW tiles
                ff._BWD_DW[128] = cfg_of(bs["dw_atomic"]["cfg"])
        else:
            summary[d]["mode"] = "split"
    res["best"] = summary
    print("BEST", json.dumps(summary), flush=True)
    # one mode for all head dims: the one that wins at d_h = 128
    ff._MODE = summary[128]["mode"]
    if ff._MODE == "atomic" and summary[64].get("dw_atomic"):
        ff._BWD_DW[64] = cfg_of(summary[64]["dw_atomic"][0])
    save()

# ------------------------------------------------------------------ 3. benchmark rows
if "bench" in SECTIONS:
    tokens = [int(x) for x in os.environ.get("TOKENS", "16384,4096,65536").split(",")]
    inters = [int(x) for x in os.environ.get("INTERS", "512,256,1024").split(",")]
    dims = [int(x) for x in os.environ.get("DIMS", "128,64").split(",")]
    rounds = int(os.environ.get("ROUNDS", "2"))
    rep = float(os.environ.get("REP_MS", "40"))
    rows = []
    for d in dims:
        for n in inters:
            for T in tokens:
                if left() < (14 if T >= 65536 else 7):
                    print("SKIP bench", T, n, d, "time", flush=True)
                    continue
                print(f"[{time.time() - T0:.0f}s] bench T{T} I{n} d{d}", flush=True)
                try:
                    rows += suite.ffn_rows([T], [n], [d], 16, "bf16", rounds, rep, tags=TAGS, log=print)
                except Exception:
                    traceback.print_exc()
                harness.write_rows(os.path.join(OUT, "ffn.json"), rows, meta=dict(TAGS, mode=ff._MODE))
    res["bench_rows"] = len(rows)
    save()

if "moe" in SECTIONS and left() > 8:
    print(f"[{time.time() - T0:.0f}s] moe", flush=True)
    try:
        # (tokens, heads, d_h, experts per head, expert width, top-k); rows per expert = T k / E_h
        moe_cases = os.environ.get(
            "MOE", "4096x16x128x8x256x2,16384x16x128x8x256x2,4096x16x128x32x128x1,2048x16x128x32x128x1"
        )
        mrows = []
        for c in moe_cases.split(","):
            if left() < 6:
                break
            T, H, d, Eh, f, k = (int(v) for v in c.split("x"))
            try:
                mrows += suite.moe_rows([T], H, d, Eh, f, k, "bf16", 2, 40, tags=TAGS, log=print)
            except Exception:
                traceback.print_exc()
            harness.write_rows(os.path.join(OUT, "ffn_moe.json"), mrows, meta=TAGS)
    except Exception:
        traceback.print_exc()

if "pytest" in SECTIONS and left() > 30:
    import subprocess

    try:
        cp = subprocess.run(
            ["python3", "-m", "pytest", "-q", "-m", "gpu", "-x", "tests/gpu/test_gpu_ffn.py", "-p", "no:cacheprovider"],
            capture_output=True,
            text=True,
            timeout=max(10, left() - 10),
        )
        res["pytest"] = dict(rc=cp.returncode, tail=cp.stdout[-3000:] + cp.stderr[-1500:])
    except subprocess.TimeoutExpired:
        res["pytest"] = dict(rc="timeout")
    print("PYTEST", json.dumps(res["pytest"]), flush=True)
    save()

# ------------------------------------------------------------------ summary
print("=== SUMMARY (ffn round", ROUND, f"{time.time() - T0:.0f}s)")
for r in res.get("checks", []):
    print(
        "check",
        r.get("shape"),
        r.get("dtype"),
        "ok" if r.get("ok") else "FAIL",
        r.get("worst"),
        r.get("worst_torch_lowp"),
        r.get("error", ""),
    )
if "best" in res:
    print("best", json.dumps(res["best"]))
try:
    for r in harness.read_rows(os.path.join(OUT, "ffn.json")):
        print(
            r["kernel"],
            r["shape"],
            f"ours {r['ours_ms']:.3f} peer {r['peer_ms']:.3f} x{r['speedup']:.2f}",
            f"dense x{r.get('speedup_vs_dense', 0):.2f}",
            f"mem x{r.get('memory_ratio') or 0:.1f}",
        )
except Exception:
    pass
