"""GPU round 2/3 for area `gemm`: sweeps that decide the heuristic's remaining choices, side by side with cuBLAS.

Run from the repo root with PYTHONPATH=src after the benchmark suites; writes $OUT_AREA/sweeps.json.
"""

import json
import os
import sys
import time

import torch
from triton.testing import do_bench

from tilewise.kernels.gemm import Config as C
from tilewise.kernels.gemm import choose_config, matmul

T0 = time.time()
BUDGET = float(os.environ.get("BUDGET_S", "60"))
OUT = os.environ.get("OUT_AREA", "/tmp/out")
NAME = os.environ.get("SWEEP_NAME", "sweeps")
res = {}


def left():
    return BUDGET - (time.time() - T0)


def ms(fn, rep=50):
    return do_bench(fn, warmup=10, rep=rep, return_mode="median")


def check(m, n, k, trans_a=False, trans_b=False):
    a = (
        torch.randn(k, m, device="cuda", dtype=torch.bfloat16).t()
        if trans_a
        else torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    )
    b = (
        torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
        if trans_b
        else torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    )
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    matmul(a, b, out=c)
    ref = a.float() @ b.float()
    err = ((c.float() - ref).norm() / ref.norm()).item()
    ok = err < 1e-2 and not torch.isnan(c).any()
    print(
        f"check {m}x{n}x{k} tA={trans_a} tB={trans_b} {choose_config(m, n, k, 'bf16', a.device).tag()} err={err:.1e} {'OK' if ok else 'FAIL'}",
        flush=True,
    )
    res.setdefault("checks", {})[f"{m}x{n}x{k}/{trans_a}/{trans_b}"] = dict(err=err, ok=bool(ok))
    if not ok and choose_config(m, n, k, "bf16", a.device).warp_specialize:
        open(os.path.join(OUT, "NO_WS"), "w").write(f"{m}x{n}x{k} err={err}\n")  # the bench then runs without WS


def sweep(m, n, k, cfgs):
    key = f"{m}x{n}x{k}"
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    flops, nbytes = 2 * m * n * k, (m * k + k * n + m * n) * 2
    row = {}
    default = choose_config(m, n, k, "bf16", a.device)
    print(f"== {key} (default {default.tag()})", flush=True)
    for cfg in [default, *cfgs]:
        if left() < 6:
            print("  (time budget: skipping rest)", flush=True)
            break
        try:
            t1 = ms(lambda cfg=cfg: matmul(a, b, config=cfg))
            tc = ms(lambda: a @ b)
            t2 = ms(lambda cfg=cfg: matmul(a, b, config=cfg))
            t = min(t1, t2)
            row[cfg.tag()] = dict(ms=t, cublas_ms=tc, speedup=tc / t, tflops=flops / t / 1e9, tbps=nbytes / t / 1e9)
            print(
                f"  {cfg.tag():34s} {t * 1e3:8.1f} us {flops / t / 1e9:5.0f} TF/s {nbytes / t / 1e9:5.2f} TB/s  cuBLAS {tc * 1e3:8.1f} us  x{tc / t:.3f}",
                flush=True,
            )
        except Exception as e:
            row[cfg.tag()] = dict(error=str(e)[:200])
            print(f"  {cfg.tag():34s} ERROR {str(e)[:160]}", flush=True)
    ok = {kk: v for kk, v in row.items() if "ms" in v}
    if ok:
        best = max(ok, key=lambda kk: ok[kk]["speedup"])
        print(f"  BEST {key}: {best} x{ok[best]['speedup']:.3f}", flush=True)
    res[key] = row
    json.dump(res, open(os.path.join(OUT, f"{NAME}.json"), "w"), indent=1)


if "--checks" in sys.argv:
    for shape in [
        (8192, 8192, 8192), (64, 24576, 8192), (1, 24576, 8192), (16, 24576, 8192), (128, 24576, 8192),
        (256, 24576, 8192), (32, 4096, 14336), (8, 4096, 4096), (5000, 5000, 5000), (333, 7777, 2049),
        (3000, 5000, 700), (1000, 1000, 1000), (257, 513, 1025), (48, 11008, 4096), (4000, 4000, 64),
    ]:  # fmt: skip
        check(*shape)
    check(1111, 2222, 3333, True, True)
    # B with NaN in its row padding (the kernel may load it, no output may see it)
    big = torch.full((4097, 1000 + 8), float("nan"), device="cuda", dtype=torch.bfloat16)
    bp = big[:, :1001]
    bp.copy_(torch.randn(4097, 1001, device="cuda"))
    ap = torch.randn(777, 4097, device="cuda", dtype=torch.bfloat16)
    cp = matmul(ap, bp)
    err = ((cp.float() - ap.float() @ bp.float()).norm() / (ap.float() @ bp.float()).norm()).item()
    print(f"check padded-NaN B 777x1001x4097 err={err:.1e} nan={bool(torch.isnan(cp).any())}", flush=True)
    from tilewise.kernels.reduce import sum as tsum

    for shape, dim in [((32768, 8192), 0), ((32768, 8192), 1), ((3, 5, 100003), -1), ((2**28,), None)]:
        x = torch.randn(*shape, device="cuda")
        got = tsum(x, dim).double()
        ref = x.double().sum() if dim is None else x.double().sum(dim)
        bad = ((got - ref).abs() > 1e-5 * x.double().abs().sum() ** 0.5 + 1e-3 * ref.abs() + 1e-3).sum().item()
        print(f"check sum {shape} dim={dim} bad={bad}", flush=True)
        res.setdefault("checks", {})[f"sum{shape}/{dim}"] = dict(bad=bad, ok=bad == 0)
    json.dump(res, open(os.path.join(OUT, f"{NAME}.json"), "w"), indent=1)

PLAN = {
    (256, 24576, 8192): [
        C(128, 128, 64, 8, 1, 8, 4, True), C(128, 256, 64, 8, 1, 8, 3, True, "", True),
        C(128, 128, 64, 8, 1, 8, 3, True, "", True),
    ],
    (4096, 4096, 4096): [C(128, 256, 64, 8, 1, 8, 4), C(128, 256, 64, 8, 1, 8, 3, True)],
    (1024, 24576, 8192): [C(128, 256, 64, 8, 1, 8, 3, True), C(128, 256, 64, 8, 1, 8, 4)],
    (8192, 8192, 8192): [C(128, 256, 64, 8, 1, 8, 4), C(128, 256, 64, 8, 1, 8, 4, True, "", True)],
    (64, 24576, 8192): [C(64, 256, 64, 8, 1, 8, 4), C(64, 256, 128, 8, 1, 4, 3), C(32, 256, 128, 8, 1, 4, 4)],
    (1000, 1000, 1000): [C(64, 64, 64, 8, 1, 4, 4), C(128, 128, 64, 8, 1, 8, 4, True)],
}  # fmt: skip
for shape, cfgs in PLAN.items():
    if left() < 8 or "--no-sweeps" in sys.argv:
        break
    sweep(*shape, cfgs)
print(f"sweeps done in {time.time() - T0:.0f}s", flush=True)
