# ruff: noqa: B023, F821
"""Round 1 on the H200 (area attn): full-size correctness incl. bf16, then a config sweep side by side with SDPA.

Writes $OUT_AREA/sweep.json; prints the best config per shape last. Time-boxed by ATTN_BUDGET seconds.
"""

from __future__ import annotations

import json
import math
import os
import time
import traceback

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

from tilewise.bench import harness
from tilewise.kernels.decode import choose_splits, decode_attention
from tilewise.kernels.flash_attention import ForwardConfig, attention
from tilewise.model import traffic

OUT = os.environ.get("OUT_AREA", "/tmp/attn_out")
os.makedirs(OUT, exist_ok=True)
T0 = time.time()
BUDGET = float(os.environ.get("ATTN_BUDGET", 140))
res: dict = {"correct": {}, "fwd": {}, "dec": {}, "errors": []}
SMOKE = os.environ.get("ATTN_SMOKE") == "1"  # CPU dry run under TRITON_INTERPRET=1 with tiny shapes
dev = "cpu" if SMOKE else "cuda"
torch.manual_seed(0)
if SMOKE:
    import contextlib

    def sdpa_kernel(_b):
        return contextlib.nullcontext()

    def do_bench(fn, warmup=0, rep=0, return_mode="median"):
        t = time.time()
        fn()
        return (time.time() - t) * 1e3


def left() -> float:
    return BUDGET - (time.time() - T0)


def ms(fn, rep=40) -> float:
    return do_bench(fn, warmup=10, rep=rep, return_mode="median")


rows: dict[str, list] = {"attention": [], "decode": []}
CMD = "bash benchmarks/gpu/queue/attn.sh (round 1 sweep: benchmarks/gpu/queue/attn_sweep.py)"


def save():
    with open(os.path.join(OUT, "sweep.json"), "w") as f:
        json.dump(res, f, indent=1)
    if not SMOKE:
        for name, rr in rows.items():
            if rr:
                harness.write_rows(os.path.join(OUT, f"{name}_r1.json"), rr, meta=harness.env_tags(CMD))


def ref_attn(q, k, v, causal):
    H, Hk = q.shape[1], k.shape[1]
    k = k.float().repeat_interleave(H // Hk, 1)
    v = v.float().repeat_interleave(H // Hk, 1)
    s = q.float() @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        Sq, Sk = q.shape[2], k.shape[2]
        i = torch.arange(Sq, device=dev)[:, None]
        j = torch.arange(Sk, device=dev)[None, :]
        s = s.masked_fill(j > i + Sk - Sq, float("-inf"))
    lse = torch.logsumexp(s, -1)
    return torch.softmax(s, -1) @ v, lse


# ------------------------------------------------------------------ correctness
print(f"torch {torch.__version__}  device {dev if SMOKE else torch.cuda.get_device_name(0)}", flush=True)
FWD_CHECKS = [
    (2, 8, 2, 1000, 1000, 128, True, torch.bfloat16),
    (2, 8, 8, 1000, 1000, 128, False, torch.bfloat16),
    (1, 8, 1, 777, 777, 64, True, torch.float16),
    (1, 4, 4, 333, 333, 256, True, torch.bfloat16),
    (1, 4, 4, 333, 333, 256, False, torch.float16),
    (2, 4, 2, 100, 300, 128, True, torch.bfloat16),
    (1, 4, 4, 1, 1, 64, False, torch.bfloat16),
]
if SMOKE:
    FWD_CHECKS = [(1, 2, 1, 40, 40, 32, True, torch.float16), (1, 2, 2, 20, 50, 16, True, torch.float32)]
for B, H, Hk, Sq, Sk, D, c, dt in FWD_CHECKS:
    key = f"fwd B{B} H{H} Hk{Hk} Sq{Sq} Sk{Sk} D{D} c{int(c)} {dt}"
    try:
        q = torch.randn(B, H, Sq, D, device=dev, dtype=dt)
        k = torch.randn(B, Hk, Sk, D, device=dev, dtype=dt)
        v = torch.randn(B, Hk, Sk, D, device=dev, dtype=dt)
        o, lse = attention(q, k, v, causal=c)
        ro, rl = ref_attn(q, k, v, c)
        err = (o.float() - ro).abs().max().item()
        lerr = (lse - rl).abs().max().item()
        res["correct"][key] = {"max_err": err, "lse_err": lerr, "ok": err < 3e-2 and lerr < 1e-2}
    except Exception as e:  # keep going: the sweep still tells us something
        res["correct"][key] = {"error": repr(e)[:400]}
        traceback.print_exc()
    print(key, res["correct"][key], flush=True)


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
        for ns in (None, 1, 3, 16):
            if paged:
                page = 256
                npg = L // page
                perm = torch.randperm(B * npg, device=dev)
                kp = torch.empty(B * npg, Hk, page, D, device=dev, dtype=dt)
                vp = torch.empty_like(kp)
                kp[perm] = k.reshape(B, Hk, npg, page, D).permute(0, 2, 1, 3, 4).reshape(B * npg, Hk, page, D)
                vp[perm] = v.reshape(B, Hk, npg, page, D).permute(0, 2, 1, 3, 4).reshape(B * npg, Hk, page, D)
                table = perm.view(B, npg).to(torch.int32)
                o, _ = decode_attention(q, kp, vp, torch.tensor(lens, device=dev), block_table=table, num_splits=ns)
            else:
                o, _ = decode_attention(q, k, v, torch.tensor(lens, device=dev), num_splits=ns)
            errs[str(ns)] = (o.float() - ro).abs().max().item()
        res["correct"][key] = {"max_err": errs, "ok": max(errs.values()) < 2e-2}
    except Exception as e:
        res["correct"][key] = {"error": repr(e)[:400]}
        traceback.print_exc()
    print(key, res["correct"][key], flush=True)
save()
print(f"[{time.time() - T0:.0f}s] correctness done", flush=True)

# ------------------------------------------------------------------ copy bandwidth (the 90% target's yardstick)
if not SMOKE:
    src = torch.empty(1 << 29, device=dev, dtype=torch.bfloat16)  # 1 GiB
    dst = torch.empty_like(src)
    t = ms(lambda: dst.copy_(src))
    res["copy_TBps"] = 2 * src.numel() * 2 / t / 1e9
    print(f"copy {res['copy_TBps']:.2f} TB/s (read + write)", flush=True)
    del src, dst

# ------------------------------------------------------------------ decode sweep
SMS = 132 if SMOKE else torch.cuda.get_device_properties(0).multi_processor_count
varlens = [1024 + round(i * (65536 - 1024) / 31) for i in range(32)]
dec_shapes = [
    ("B1 Hq32 Hkv8 L128k", 1, 32, 8, [131072]),
    ("B8 Hq32 Hkv8 L32k", 8, 32, 8, [32768] * 8),
    ("B64 Hq32 Hkv8 L4k", 64, 32, 8, [4096] * 64),
    ("B1 Hq64 Hkv8 L64k", 1, 64, 8, [65536]),
    ("varlen B32 Hq32 Hkv8 1k-64k", 32, 32, 8, varlens),
]
tiles = [(64, 4, 3), (128, 4, 2), (32, 4, 4)]
caps = [2048, 4096, 1 << 30]
D = 128
if SMOKE:
    dec_shapes = [("smoke", 2, 8, 2, [300, 100])]
    tiles, caps, D = [(32, 4, 1)], [128], 32
for name, B, Hq, Hk, lens in dec_shapes:
    if time.time() - T0 > 60:
        break
    Lmax = max(lens)
    DT = torch.float16 if SMOKE else torch.bfloat16
    q = torch.randn(B, Hq, 1, D, device=dev, dtype=DT)
    k = torch.randn(B, Hk, Lmax, D, device=dev, dtype=DT)
    v = torch.randn_like(k)
    lens_t = torch.tensor(lens, device=dev, dtype=torch.int32)
    nbytes = traffic.decode_bytes(lens, Hq, Hk, D, "bf16")
    entry = {"bytes": nbytes, "runs": {}}
    try:
        if len(set(lens)) == 1:
            t = ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
        else:
            mask = (torch.arange(Lmax, device=dev)[None, :] < lens_t[:, None]).view(B, 1, 1, Lmax)
            try:
                t = ms(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True))
            except Exception as e:  # no GQA kernel with a mask: the user expands K/V per query head
                entry["sdpa_gqa_mask_error"] = repr(e)[:300]
                kx = k.repeat_interleave(Hq // Hk, 1)
                vx = v.repeat_interleave(Hq // Hk, 1)
                t = ms(lambda: F.scaled_dot_product_attention(q, kx, vx, attn_mask=mask))
                entry["sdpa_expanded"] = True
                del kx, vx
        entry["sdpa_us"] = t * 1e3
    except Exception as e:
        entry["sdpa_error"] = repr(e)[:300]
    for tile in tiles:
        for cap in caps:
            if time.time() - T0 > 62:
                break
            try:
                splits, chunk = (None, None)
                import tilewise.kernels.decode as dm

                saved = dm._MAX_CHUNK
                dm._MAX_CHUNK = cap
                splits, chunk = choose_splits(B, Hk, Lmax, SMS, tile[0])
                dm._MAX_CHUNK = saved
                fn = lambda: decode_attention(q, k, v, lens_t, tile=tile, max_chunk=cap)
                fn()
                t = ms(fn)
                entry["runs"][f"{tile} cap{cap}"] = {"us": t * 1e3, "TBps": nbytes / t / 1e9, "splits": splits}
            except Exception as e:
                entry["runs"][f"{tile} cap{cap}"] = {"error": repr(e)[:300]}
    best = min(
        ((k_, r) for k_, r in entry["runs"].items() if "us" in r), key=lambda kv: kv[1]["us"], default=(None, None)
    )
    entry["best"] = best[0]
    res["dec"][name] = entry
    if best[1] and not SMOKE:
        rows["decode"].append(
            harness.make_row(
                kernel="decode_attention",
                shape=name,
                dtype="bf16",
                peer="sdpa(enable_gqa=True)" + (" padded+mask" if len(set(lens)) > 1 else ""),
                ours_ms=best[1]["us"] / 1e3,
                peer_ms=(entry.get("sdpa_us") or 0) / 1e3 or None,
                flops=traffic.decode_flops(lens, Hq, D),
                nbytes=nbytes,
                tags=harness.env_tags(CMD),
                extra={
                    "config": best[0],
                    "splits": best[1]["splits"],
                    "copy_TBps": res.get("copy_TBps"),
                    "timing": "do_bench median, rep 40 ms (sweep)",
                },
            )
        )
    sd = entry.get("sdpa_us")
    if best[1]:
        print(
            f"[{time.time() - T0:.0f}s] DEC {name}: best {best[0]} {best[1]['us']:.1f} us {best[1]['TBps']:.2f} TB/s"
            f" | sdpa {sd and round(sd, 1)} us -> x{(sd or 0) / best[1]['us']:.3f}",
            flush=True,
        )
    del q, k, v
    torch.cuda.empty_cache()
    save()

# ------------------------------------------------------------------ forward sweep
fwd_shapes = [
    ("B4 H32 S4096 D128 c0", 4, 32, 4096, 128, False),
    ("B4 H32 S4096 D128 c1", 4, 32, 4096, 128, True),
    ("B4 H32 S4096 D64 c1", 4, 32, 4096, 64, True),
    ("B16 H16 S1024 D128 c1", 16, 16, 1024, 128, True),
    ("B2 H32 S16384 D128 c1", 2, 32, 16384, 128, True),
]
cfgs128 = [
    ForwardConfig(128, 128, 8, 3, True, False),
    ForwardConfig(128, 64, 8, 3, True, False),
    ForwardConfig(128, 128, 8, 3, False, False),
    ForwardConfig(128, 128, 8, 2, True, False),
]
cfgs64 = [
    ForwardConfig(128, 128, 8, 3, True, False),
    ForwardConfig(128, 64, 4, 3, True, False),
]
if SMOKE:
    fwd_shapes = [("smoke", 1, 2, 64, 32, True)]
    cfgs64 = [ForwardConfig(32, 32, 4, 1, True, False)]
for name, B, H, S, Dh, c in fwd_shapes:
    if left() < 15:
        break
    q, k, v = (torch.randn(B, H, S, Dh, device=dev, dtype=torch.float16 if SMOKE else torch.bfloat16) for _ in range(3))
    flops = traffic.attention_flops(B, H, S, S, Dh, causal=c, exact_causal=False)
    entry = {"flops": flops, "runs": {}}
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        t = ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=c))
    entry["sdpa_tflops"] = flops / t / 1e9
    ref = None
    for cfg in cfgs128 if Dh == 128 else cfgs64:
        if left() < 12:
            break
        tag = f"{cfg.block_m}x{cfg.block_n} w{cfg.num_warps} s{cfg.num_stages} desc{int(cfg.use_desc)} ws{int(cfg.warp_specialize)}"
        try:
            t1 = time.time()
            o, _ = attention(q, k, v, causal=c, config=cfg)
            if not SMOKE:
                torch.cuda.synchronize()
            comp = time.time() - t1
            if ref is None:
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    ref = F.scaled_dot_product_attention(q[:1], k[:1], v[:1], is_causal=c).float()
            err = (o[:1].float() - ref).abs().max().item()
            t = ms(lambda cfg=cfg: attention(q, k, v, causal=c, config=cfg))
            entry["runs"][tag] = {"tflops": flops / t / 1e9, "err": err, "compile_s": comp}
        except Exception as e:
            entry["runs"][tag] = {"error": repr(e)[:300]}
        print(f"  [{time.time() - T0:.0f}s] {name} {tag}: {entry['runs'][tag]}", flush=True)
    best = max(
        ((k_, r) for k_, r in entry["runs"].items() if "tflops" in r and r["err"] < 5e-2),
        key=lambda kv: kv[1]["tflops"],
        default=(None, None),
    )
    entry["best"] = best[0]
    res["fwd"][name] = entry
    if best[1] and not SMOKE:
        rows["attention"].append(
            harness.make_row(
                kernel="attention",
                shape=name,
                dtype="bf16",
                peer="sdpa(flash)",
                ours_ms=flops / best[1]["tflops"] / 1e9,
                peer_ms=flops / entry["sdpa_tflops"] / 1e9,
                flops=flops,
                nbytes=traffic.attention_bytes(B, H, H, S, S, Dh, "bf16"),
                tags=harness.env_tags(CMD),
                extra={"config": best[0], "timing": "do_bench median, rep 40 ms (sweep)"},
            )
        )
    if best[1]:
        print(
            f"[{time.time() - T0:.0f}s] FWD {name}: best {best[0]} {best[1]['tflops']:.0f} TFLOP/s | sdpa "
            f"{entry['sdpa_tflops']:.0f} -> x{best[1]['tflops'] / entry['sdpa_tflops']:.3f}",
            flush=True,
        )
    del q, k, v
    torch.cuda.empty_cache()
    save()

# ------------------------------------------------------------------ warp specialization (last: may not compile)
ws_cfgs = [ForwardConfig(128, 128, 4, 3, True, True)]
for name, B, H, S, Dh, c in fwd_shapes[:1]:
    if SMOKE or left() < 15:
        break
    q, k, v = (torch.randn(B, H, S, Dh, device=dev, dtype=torch.bfloat16) for _ in range(3))
    flops = traffic.attention_flops(B, H, S, S, Dh, causal=c, exact_causal=False)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        ref = F.scaled_dot_product_attention(q[:1], k[:1], v[:1], is_causal=c).float()
    for cfg in ws_cfgs:
        if left() < 12:
            break
        tag = f"{cfg.block_m}x{cfg.block_n} w{cfg.num_warps} s{cfg.num_stages} desc1 ws1"
        try:
            o, _ = attention(q, k, v, causal=c, config=cfg)
            err = (o[:1].float() - ref).abs().max().item()
            t = ms(lambda cfg=cfg: attention(q, k, v, causal=c, config=cfg))
            res["fwd"][name]["runs"][tag] = {"tflops": flops / t / 1e9, "err": err}
        except Exception as e:
            res["fwd"].setdefault(name, {"runs": {}})["runs"][tag] = {"error": repr(e)[:300]}
        print(f"  [{time.time() - T0:.0f}s] WS {name} {tag}: {res['fwd'][name]['runs'][tag]}", flush=True)
    del q, k, v
    save()

print("=== SUMMARY attn round 1")
for key, r in res["correct"].items():
    print("CHECK", "ok " if r.get("ok") else "BAD", key, {k: v for k, v in r.items() if k != "ok"})
for name, e in res["dec"].items():
    b = e["runs"].get(e["best"]) if e.get("best") else None
    if b:
        print(
            f"DEC {name}: {e['best']} {b['us']:.1f}us {b['TBps']:.2f}TB/s splits={b['splits']} sdpa={e.get('sdpa_us')}"
        )
for name, e in res["fwd"].items():
    b = e["runs"].get(e["best"]) if e.get("best") else None
    if b:
        print(f"FWD {name}: {e['best']} {b['tflops']:.0f} vs sdpa {e['sdpa_tflops']:.0f}")
print(f"total {time.time() - T0:.0f}s")
