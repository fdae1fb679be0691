# ruff: noqa: B023, F821
"""Round 3 on the H200 (area attn), the last: decode (rewritten loads) checks, tile sweep and rows; forward rows.

1. decode correctness at full size (bf16/fp16, varlen with 0 and 1, paged, every split path);
2. decode tile sweep (BLOCK_N, warps, stages, TMA or plain loads, chunk cap) on three of the issue's
   shapes; the best becomes the module's `_DECODE_TILE` / `_DECODE_TMA` / `_MAX_CHUNK` for step 3
   (and is then written into decode.py);
3. `tilewise bench decode` rows -> $OUT_AREA/decode.json (written after every row);
4. `tilewise bench attention` rows -> $OUT_AREA/attention.json (written after every row), the
   tile table as measured in round 2, SDPA's default backend as the headline peer.
Writes $OUT_AREA/final_sweep.json; prints a summary last. Time-boxed by ATTN_BUDGET seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback

import torch
from triton.testing import do_bench

import tilewise.kernels.decode as dm
from tilewise.bench import harness
from tilewise.bench.suites import attention as attention_suite
from tilewise.bench.suites import decode as decode_suite
from tilewise.model import traffic

OUT = os.environ.get("OUT_AREA", "/tmp/attn_out")
os.makedirs(OUT, exist_ok=True)
T0 = time.time()
BUDGET = float(os.environ.get("ATTN_BUDGET", 110))
res: dict = {"checks": {}, "dec_sweep": {}, "fwd_sweep": {}}
SMOKE = os.environ.get("ATTN_SMOKE") == "1"  # CPU dry run (TRITON_INTERPRET=1, patched torch; /tmp wrapper)
dev = "cuda"


def el() -> float:
    return time.time() - T0


def ms(fn, rep=30) -> float:
    return do_bench(fn, warmup=5, rep=rep, return_mode="median")


def save():
    with open(os.path.join(OUT, "final_sweep.json"), "w") as f:
        json.dump(res, f, indent=1)


def progress(it, total=None, desc=None):
    for i, x in enumerate(it):
        print(f"[{el():.0f}s] {desc} {i + 1}/{total}: {x[0] if isinstance(x, tuple) and isinstance(x[0], str) else x}")
        sys.stdout.flush()
        yield x


def run_suite(suite, name, extra):
    p = argparse.ArgumentParser()
    suite.add_arguments(p)
    p.add_argument("--json")
    args = p.parse_args([*extra, "--json", os.path.join(OUT, f"{name}.json")])
    cmd = " ".join(["tilewise bench", name, *extra, "--json", f"benchmarks/results/h200/{name}.json"])
    sys.argv = cmd.split()  # env_tags records the equivalent CLI command in each row
    try:
        rows = suite.run(args, progress)
        harness.write_rows(args.json, rows, meta=harness.env_tags(cmd))
        print(harness.format_table(rows), flush=True)
        return rows
    except Exception:
        traceback.print_exc()
        return []


print(f"torch {torch.__version__} {'cpu' if SMOKE else torch.cuda.get_device_name(0)}", flush=True)

# ------------------------------------------------------------------ 1. decode checks


def ref_decode(q, k, v, lens):
    B, Hq, D = q.shape
    Hk = k.shape[1]
    out = torch.zeros(B, Hq, D, device=dev)
    for b in range(B):
        L = int(lens[b])
        if L == 0:
            continue
        kk = k[b, :, :L].float().repeat_interleave(Hq // Hk, 0)
        vv = v[b, :, :L].float().repeat_interleave(Hq // Hk, 0)
        s = torch.einsum("hd,hld->hl", q[b].float(), kk) / math.sqrt(D)
        out[b] = torch.einsum("hl,hld->hd", torch.softmax(s, -1), vv)
    return out


DEC_CHECKS = [
    (4, 32, 8, 5000, 128, [0, 1, 4097, 5000], torch.bfloat16, False),
    (3, 64, 8, 20000, 128, [20000, 333, 12345], torch.bfloat16, False),
    (2, 8, 8, 3000, 64, [3000, 2999], torch.float16, False),
    (3, 32, 8, 4096, 128, [4096, 100, 2500], torch.bfloat16, True),
]
if SMOKE:
    DEC_CHECKS = [
        (2, 8, 2, 512, 32, [0, 300], torch.float16, False),
        (2, 8, 2, 512, 32, [512, 77], torch.float16, True),
    ]
for B, Hq, Hk, L, D, lens, dt, paged in DEC_CHECKS:
    key = f"dec B{B} Hq{Hq} Hk{Hk} L{L} D{D} {lens} {dt} paged={paged}"
    try:
        q = torch.randn(B, Hq, D, device=dev, dtype=dt)
        k = torch.randn(B, Hk, L, D, device=dev, dtype=dt)
        v = torch.randn(B, Hk, L, D, device=dev, dtype=dt)
        ro = ref_decode(q, k, v, lens)
        errs = {}
        for ns in (None, 1, 3, 16, "plain"):
            if paged:
                page = 256
                npg = L // page
                perm = torch.randperm(B * npg, device=dev)
                kp = torch.empty(B * npg, Hk, page, D, device=dev, dtype=dt)
                vp = torch.empty_like(kp)
                kp[perm] = k.reshape(B, Hk, npg, page, D).permute(0, 2, 1, 3, 4).reshape(B * npg, Hk, page, D)
                vp[perm] = v.reshape(B, Hk, npg, page, D).permute(0, 2, 1, 3, 4).reshape(B * npg, Hk, page, D)
                table = perm.view(B, npg).to(torch.int32)
                o, lse = dm.decode_attention(
                    q, kp, vp, torch.tensor(lens, device=dev), block_table=table,
                    num_splits=None if ns == "plain" else ns, use_desc=ns != "plain",
                )  # fmt: skip
            else:
                o, lse = dm.decode_attention(
                    q, k, v, torch.tensor(lens, device=dev),
                    num_splits=None if ns == "plain" else ns, use_desc=ns != "plain",
                )  # fmt: skip
            errs[str(ns)] = (o.float() - ro).abs().max().item()
            if lens[0] == 0:
                errs[f"{ns} lse0=-inf"] = float(not bool((lse[0] == float("-inf")).all()))
        res["checks"][key] = {"max_err": errs, "ok": max(errs.values()) < 2e-2}
    except Exception as e:
        res["checks"][key] = {"error": repr(e)[:600]}
        traceback.print_exc()
    print(f"[{el():.0f}s]", key, res["checks"][key], flush=True)
save()

# ------------------------------------------------------------------ 2. decode tile sweep
sweep_shapes = [s for s in decode_suite.SHAPES if s[0].startswith(("B1 Hq32 Hkv8", "B1 Hq64", "B8 "))]
tiles = [
    (64, 4, 2, True), (64, 4, 3, True), (64, 4, 4, True), (128, 4, 2, True), (128, 4, 3, True),
    (32, 4, 4, True), (64, 4, 3, False), (32, 4, 4, False),
]  # fmt: skip
caps = [2048, 4096, 1 << 30]
HD = 128
if SMOKE:
    sweep_shapes, tiles, caps, HD = (
        [("smoke", 8, 2, [100, 37, 0])],
        [(32, 4, 1, True), (64, 4, 1, False)],
        [64, 128],
        32,
    )
    decode_suite.SHAPES = [("smoke", 8, 2, [100, 37, 0])]
times: dict = {}
for name, Hq, Hk, lens in sweep_shapes:
    if el() > 0.45 * BUDGET:
        break
    B, Lmax = len(lens), max(lens)
    q = torch.randn(B, Hq, 1, HD, device=dev, dtype=torch.bfloat16)
    k = torch.randn(B, Hk, Lmax, HD, device=dev, dtype=torch.bfloat16)
    v = torch.randn_like(k)
    lens_t = torch.tensor(lens, device=dev, dtype=torch.int32)
    nbytes = traffic.decode_bytes(lens, Hq, Hk, HD, "bf16")
    for tile in tiles:
        for cap in caps:
            try:
                t = ms(lambda: dm.decode_attention(q, k, v, lens_t, tile=tile[:3], max_chunk=cap, use_desc=tile[3]))
                times.setdefault((tile, cap), {})[name] = t
                res["dec_sweep"].setdefault(name, {})[f"{tile} cap{cap}"] = {"us": t * 1e3, "TBps": nbytes / t / 1e9}
            except Exception as e:
                res["dec_sweep"].setdefault(name, {})[f"{tile} cap{cap}"] = {"error": repr(e)[:300]}
    best = min(
        ((kk, r) for kk, r in res["dec_sweep"][name].items() if "us" in r), key=lambda x: x[1]["us"], default=None
    )
    print(f"[{el():.0f}s] DEC sweep {name}: best {best}", flush=True)
    del q, k, v
    torch.cuda.empty_cache()
    save()
done = [n for n, *_ in sweep_shapes if n in res["dec_sweep"]]
full = {key: v for key, v in times.items() if all(n in v for n in done)}
if full:
    # one tile for every shape: the smallest geometric mean of time over the swept shapes
    (tile, cap), _ = min(full.items(), key=lambda kv: sum(math.log(x) for x in kv[1].values()))
    dm._DECODE_TILE, dm._DECODE_TMA, dm._MAX_CHUNK = tile[:3], tile[3], cap
    res["dec_choice"] = {"tile": tile, "max_chunk": cap}
print(f"[{el():.0f}s] decode tile {dm._DECODE_TILE} tma {dm._DECODE_TMA} max_chunk {dm._MAX_CHUNK}", flush=True)
save()

# ------------------------------------------------------------------ 3. decode rows
dec_rows = run_suite(
    decode_suite, "decode", ["--rounds", "3", "--rep-ms", "40"] + (["--head-dim", "32"] if SMOKE else [])
)

# ------------------------------------------------------------------ 4. forward rows
left = BUDGET - el()
shapes = "all" if left > 30 else "headline"
if SMOKE:
    shapes = "1,4,2,40,32,1;1,2,2,17,64,0"
att_rows = run_suite(attention_suite, "attention", ["--shapes", shapes, "--rounds", "3", "--rep-ms", "40"])

print("=== SUMMARY attn round 3 (final)")
for key, r in res["checks"].items():
    print("CHECK", "ok " if r.get("ok") else "BAD", key, r.get("max_err", r.get("error")))
print("decode choice", res.get("dec_choice"))
for r in dec_rows:
    print(
        f"DEC {r['shape']}: {r['ours_ms'] * 1e3:.1f} us {r['tbps']:.2f} TB/s ({r['copy_fraction']:.0%} of copy) "
        f"vs sdpa {r['peer_ms'] * 1e3:.1f} us -> x{r['speedup']:.3f}  splits={r['splits']} {r['tile']}"
    )
for r in att_rows:
    print(
        f"FWD {r['shape']}: {r['tflops']:.0f} TFLOP/s vs sdpa default {r['peer_tflops'] or 0:.0f} "
        f"(x{r['speedup'] or 0:.3f}) vs flash x{(r['speedup_vs_sdpa_flash'] or 0):.3f} err {r['max_abs_err_vs_sdpa']}"
    )
print(f"total {el():.0f}s")
