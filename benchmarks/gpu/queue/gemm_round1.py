"""GPU round 1 for area `gemm`: full-size correctness (bf16 included) + config sweeps vs cuBLAS / torch.sum.

Run from the repo root with PYTHONPATH=src; writes $OUT_AREA/round1.json. Prints the best config per shape.
"""

import json
import os
import time
import traceback

import torch
import triton
from triton.testing import do_bench

from tilewise.kernels.gemm import Config, choose_config, matmul
from tilewise.kernels.reduce import SumConfig
from tilewise.kernels.reduce import sum as tsum

T0 = time.time()
BUDGET = float(os.environ.get("BUDGET_S", "215"))
OUT = os.environ.get("OUT_AREA", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
res = {"env": dict(torch=torch.__version__, triton=triton.__version__, gpu=torch.cuda.get_device_name(0))}
print(res["env"], flush=True)
torch.backends.cuda.matmul.allow_tf32 = False


def left():
    return BUDGET - (time.time() - T0)


def save():
    json.dump(res, open(os.path.join(OUT, "round1.json"), "w"), indent=1)


def ms(fn, rep=60):
    return do_bench(fn, warmup=10, rep=rep, return_mode="median")


# ------------------------------------------------------------------ correctness at full size
checks = {}


def check(name, m, n, k, dtype, cfg=None, trans_a=False, trans_b=False, bias=False, act="none"):
    try:
        a = (
            torch.randn(k, m, device="cuda", dtype=dtype).t()
            if trans_a
            else torch.randn(m, k, device="cuda", dtype=dtype)
        )
        b = (
            torch.randn(n, k, device="cuda", dtype=dtype).t()
            if trans_b
            else torch.randn(k, n, device="cuda", dtype=dtype)
        )
        bb = torch.randn(n, device="cuda", dtype=dtype) if bias else None
        c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
        matmul(a, b, out=c, bias=bb, activation=act, config=cfg)
        ref = a.float() @ b.float()
        if bias:
            ref = ref + bb.float()
        if act == "relu":
            ref = ref.relu()
        elif act == "silu":
            ref = torch.nn.functional.silu(ref)
        err = ((c.float() - ref).norm() / ref.norm()).item()
        nan = bool(torch.isnan(c).any())
        tol = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 5e-3}[dtype]
        ok = (not nan) and err < tol
        checks[name] = dict(err=err, nan=nan, ok=ok)
        print(f"check {name:40s} err={err:.2e} nan={nan} {'OK' if ok else 'FAIL'}", flush=True)
        # call twice: split-K counters must have been reset
        c2 = matmul(a, b, bias=bb, activation=act, config=cfg)
        if not torch.equal(c2, c):
            checks[name]["ok"] = False
            print(f"check {name} second call differs (counter reset / determinism)", flush=True)
    except Exception as e:
        checks[name] = dict(ok=False, error=str(e)[:400])
        print(f"check {name} ERROR {e!r}"[:600], flush=True)
        traceback.print_exc()


bf, fp16, fp32 = torch.bfloat16, torch.float16, torch.float32
check("8192^3 bf16 default", 8192, 8192, 8192, bf)
check("64x24576x8192 bf16 default", 64, 24576, 8192, bf)
check("64x24576x8192 bf16 splitk4 64x128", 64, 24576, 8192, bf, Config(64, 128, 128, 8, 4, 4, 4))
check("1x24576x8192 bf16 default", 1, 24576, 8192, bf)
check("3000x5000x700 bf16 default", 3000, 5000, 700, bf)
check("3000x5000x700 fp16 persistent", 3000, 5000, 700, fp16, Config(128, 256, 64, 8, 1, 8, 3, True))
check("2048x2048x2048 bf16 persistent", 2048, 2048, 2048, bf, Config(128, 256, 64, 8, 1, 8, 3, True))
check("48x11008x4096 fp16 default", 48, 11008, 4096, fp16)
check("1000x1000x1000 fp32 tf32", 1000, 1000, 1000, fp32)
check("777x555x333 fp32 transA transB", 777, 555, 333, fp32, trans_a=True, trans_b=True)
check("1024x1024x4096 bf16 transB splitk", 1024, 1024, 4096, bf, Config(128, 128, 64, 8, 3, 8, 3), trans_b=True)
check("513x1025x257 bf16 bias relu", 513, 1025, 257, bf, bias=True, act="relu")
check(
    "256x512x1024 bf16 bias silu persistent",
    256,
    512,
    1024,
    bf,
    Config(128, 128, 64, 8, 1, 8, 3, True),
    bias=True,
    act="silu",
)
check("127x129x7 fp16", 127, 129, 7, fp16)
res["checks"] = checks
save()

# ------------------------------------------------------------------ sum vs torch.sum (1 GiB fp32)
if left() > 25:
    x = torch.randn(256 * 1024**2, device="cuda")
    ref = x.double().sum().item()
    t_t = ms(lambda: x.sum(), rep=100)
    srow = {"torch_ms": t_t, "torch_tbps": x.numel() * 4 / t_t / 1e9, "configs": {}}
    print(f"== sum 1GiB fp32 torch {t_t * 1e3:.1f} us {x.numel() * 4 / t_t / 1e9:.2f} TB/s", flush=True)
    for cfg in [
        None,
        SumConfig(4096, 4, 8),
        SumConfig(8192, 4, 8),
        SumConfig(4096, 8, 8),
        SumConfig(8192, 2, 8),
        SumConfig(16384, 2, 16),
        SumConfig(2048, 8, 4),
        SumConfig(8192, 8, 16),
    ]:
        if left() < 5:
            break
        try:
            val = tsum(x, config=cfg).item()
            t = ms(lambda cfg=cfg: tsum(x, config=cfg), rep=100)
            sp = ms(lambda: x.sum(), rep=50) / t
            name = str(cfg)
            srow["configs"][name] = dict(
                ms=t, tbps=x.numel() * 4 / t / 1e9, speedup=sp, relerr=abs(val - ref) / abs(ref)
            )
            print(
                f"  {name:55s} {t * 1e3:7.1f} us {x.numel() * 4 / t / 1e9:.2f} TB/s x{sp:.3f} relerr {abs(val - ref) / abs(ref):.1e}",
                flush=True,
            )
        except Exception as e:
            print(f"  {cfg} ERROR {str(e)[:200]}", flush=True)
    res["sum"] = srow
    save()
    del x

# ------------------------------------------------------------------ sweeps vs cuBLAS
sweeps = {}


def sweep(m, n, k, cfgs, dtype=bf, rotate=1, label=""):
    key = f"{m}x{n}x{k}{label}"
    a = [torch.randn(m, k, device="cuda", dtype=dtype) for _ in range(rotate)]
    b = [torch.randn(k, n, device="cuda", dtype=dtype) for _ in range(rotate)]
    st = {"i": 0}

    def rot(fn):
        def call():
            st["i"] = (st["i"] + 1) % rotate
            return fn(a[st["i"]], b[st["i"]])

        return call

    def cublas(x, y):
        return x @ y

    flops = 2 * m * n * k
    nbytes = (m * k + k * n + m * n) * a[0].element_size()
    t_cub = ms(rot(cublas))
    row = {"cublas_ms": t_cub, "cublas_tflops": flops / t_cub / 1e9, "cublas_tbps": nbytes / t_cub / 1e9, "configs": {}}
    print(
        f"== {key} cuBLAS {t_cub * 1e3:.1f} us {flops / t_cub / 1e9:.0f} TF/s {nbytes / t_cub / 1e9:.2f} TB/s",
        flush=True,
    )
    default = choose_config(m, n, k, "bf16", a[0].device)
    for cfg in [None, *cfgs]:
        if left() < 8:
            print("  (time budget: skipping rest)", flush=True)
            break
        name = "default:" + default.tag() if cfg is None else cfg.tag()
        try:
            t = ms(rot(lambda x, y, cfg=cfg: matmul(x, y, config=cfg)))
            t_c2 = ms(rot(cublas), rep=30)  # side by side, drift check
            sp = t_c2 / t
            row["configs"][name] = dict(ms=t, tflops=flops / t / 1e9, tbps=nbytes / t / 1e9, speedup=sp)
            print(
                f"  {name:40s} {t * 1e3:9.1f} us {flops / t / 1e9:6.0f} TF/s {nbytes / t / 1e9:5.2f} TB/s  x{sp:.3f}",
                flush=True,
            )
        except Exception as e:
            row["configs"][name] = dict(error=str(e)[:300])
            print(f"  {name:40s} ERROR {str(e)[:200]}", flush=True)
    ok = {kk: v for kk, v in row["configs"].items() if "ms" in v}
    if ok:
        best = min(ok, key=lambda kk: ok[kk]["ms"])
        row["best"] = best
        print(f"  BEST {key}: {best} x{ok[best]['speedup']:.3f} ({ok[best]['tflops']:.0f} TF/s)", flush=True)
    sweeps[key] = row
    res["sweeps"] = sweeps
    save()
    a.clear()
    b.clear()
    torch.cuda.empty_cache()


C = Config
# the seed's skinny shape: 402 MB of B streamed once
sweep(
    64,
    24576,
    8192,
    [
        C(64, 64, 128, 8, 1, 4, 4),
        C(64, 128, 128, 8, 1, 4, 4),
        C(64, 128, 128, 8, 2, 4, 4),
        C(64, 64, 256, 8, 1, 4, 3),
        C(64, 128, 64, 8, 2, 4, 6),
        C(64, 256, 64, 8, 1, 8, 4),
        C(64, 256, 64, 8, 2, 8, 4),
        C(64, 256, 128, 8, 4, 8, 3),
        C(64, 128, 128, 8, 1, 4, 4, True),
        C(64, 256, 64, 8, 1, 8, 4, True),
        C(64, 64, 128, 8, 1, 4, 4, stream_b=True),
        C(64, 128, 128, 8, 2, 4, 4, stream_b=True),
        C(64, 64, 128, 8, 2, 4, 4),
        C(64, 128, 128, 8, 3, 4, 4),
        C(64, 256, 64, 8, 4, 8, 4),
        C(64, 256, 64, 8, 4, 4, 4),
        C(64, 256, 64, 8, 4, 8, 4, stream_b=True),
        C(64, 256, 64, 8, 11, 8, 4),
    ],
)
sweep(
    8192,
    8192,
    8192,
    [
        C(128, 256, 64, 8, 1, 8, 3),
        C(128, 256, 64, 8, 1, 8, 4),
        C(128, 128, 64, 8, 1, 8, 4),
        C(256, 128, 64, 8, 1, 8, 3),
        C(128, 256, 64, 8, 1, 8, 3, True),
        C(128, 256, 64, 8, 1, 8, 4, True),
        C(128, 128, 64, 8, 1, 8, 4, True),
        C(128, 256, 64, 16, 1, 8, 3, True),
    ],
)
sweep(
    1,
    24576,
    8192,
    [
        C(16, 64, 256, 8, 1, 4, 4),
        C(16, 128, 256, 8, 1, 4, 4),
        C(16, 128, 256, 8, 2, 4, 4),
        C(16, 64, 512, 8, 1, 4, 3),
        C(16, 256, 128, 8, 2, 4, 4),
        C(16, 128, 128, 8, 1, 4, 6),
    ],
)
sweep(
    16,
    24576,
    8192,
    [
        C(16, 64, 256, 8, 1, 4, 4),
        C(16, 128, 256, 8, 1, 4, 4),
        C(16, 128, 256, 8, 2, 4, 4),
        C(16, 64, 512, 8, 1, 4, 3),
        C(16, 256, 128, 8, 2, 4, 4),
        C(16, 256, 128, 8, 4, 4, 4),
    ],
)
sweep(
    128,
    24576,
    8192,
    [
        C(64, 128, 128, 8, 1, 4, 4),
        C(128, 128, 64, 8, 1, 8, 4),
        C(128, 128, 64, 8, 2, 8, 4),
        C(128, 64, 128, 8, 1, 4, 4),
        C(128, 256, 64, 8, 2, 8, 3),
        C(128, 256, 64, 8, 4, 8, 3),
        C(128, 128, 64, 8, 1, 8, 4, True),
    ],
)
sweep(
    256,
    24576,
    8192,
    [
        C(128, 256, 64, 8, 1, 8, 3),
        C(128, 256, 64, 8, 2, 8, 3),
        C(128, 128, 64, 8, 1, 8, 4),
        C(128, 256, 64, 8, 1, 8, 3, True),
        C(128, 128, 64, 8, 1, 8, 4, True),
    ],
)
sweep(
    1024,
    24576,
    8192,
    [C(128, 256, 64, 8, 1, 8, 3), C(128, 256, 64, 8, 1, 8, 3, True), C(128, 256, 64, 8, 1, 8, 4, True)],
)

# ------------------------------------------------------------------ default heuristic on odd shapes
odd = [
    (3000, 5000, 700),
    (48, 11008, 4096),
    (4096, 4096, 4096),
    (512, 4096, 11008),
    (2048, 14336, 4096),
    (8, 4096, 4096),
    (1000, 1000, 1000),
    (333, 7777, 2049),
    (16384, 1024, 1024),
]
res["odd"] = {}
for m, n, k in odd:
    if left() < 10:
        break
    try:
        a = torch.randn(m, k, device="cuda", dtype=bf)
        b = torch.randn(k, n, device="cuda", dtype=bf)
        t = ms(lambda a=a, b=b: matmul(a, b))
        tc = ms(lambda a=a, b=b: a @ b)
        res["odd"][f"{m}x{n}x{k}"] = dict(
            ms=t, cublas_ms=tc, speedup=tc / t, cfg=choose_config(m, n, k, "bf16", a.device).tag()
        )
        print(
            f"odd {m}x{n}x{k} {choose_config(m, n, k, 'bf16', a.device).tag()} x{tc / t:.3f} ({2 * m * n * k / t / 1e9:.0f} TF/s)",
            flush=True,
        )
    except Exception as e:
        print(f"odd {m}x{n}x{k} ERROR {str(e)[:200]}", flush=True)
save()

print("\n==== SUMMARY (elapsed %.0fs)" % (time.time() - T0))
print("checks:", sum(v.get("ok", False) for v in checks.values()), "/", len(checks), "ok")
for k_, v in sweeps.items():
    if "best" in v:
        print(f"{k_}: best {v['best']} x{v['configs'][v['best']]['speedup']:.3f} cuBLAS {v['cublas_tflops']:.0f} TF/s")
if "sum" in res and res["sum"]["configs"]:
    b_ = min(res["sum"]["configs"].items(), key=lambda kv: kv[1]["ms"])
    print(f"sum: best {b_[0]} x{b_[1]['speedup']:.3f} {b_[1]['tbps']:.2f} TB/s")

# ------------------------------------------------------------------ last (may crash the compiler): warp specialization
if left() > 20:
    sweep(
        8192,
        8192,
        8192,
        [
            C(128, 256, 64, 8, 1, 8, 3, True, "", True),
            C(128, 256, 64, 8, 1, 4, 3, True, "", True),
            C(128, 128, 64, 8, 1, 4, 4, True, "", True),
        ],
        label="ws",
    )
    v = sweeps.get("8192x8192x8192ws", {})
    if "best" in v:
        print(f"WS 8192^3: best {v['best']} x{v['configs'][v['best']]['speedup']:.3f}")
