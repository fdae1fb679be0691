"""FA3 in Gluon on the H200: correctness, the 12-problem sweep beside SDPA, and the three designs.

    python3 benchmarks/attention_fa3.py --check            # every design / head dim / mask / dtype vs float64
    python3 benchmarks/attention_fa3.py --sweep --designs  # timings (CUDA graphs, L2 flushed), JSON rows
    python3 benchmarks/attention_fa3.py --ncu-design pingpong   # one launch, for ncu

Rows go to $OUT (or --out): check.jsonl, attention_fa3.json, attention_fa3_designs.json.
Timing (`tilewise.bench.timing`): each op is captured in a CUDA graph and its replays timed with CUDA
events, the L2 flushed before each replay outside the events; rounds alternate ours / SDPA on the same
inputs; medians with p20/p80.
The sustained Tensor-Core peak is a bf16 cuBLAS 8192^3 GEMM measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time

import torch
import torch.nn.functional as F

from tilewise.bench import harness, timing
from tilewise.bench.suites.attention import SWEEP  # (B, H, Hkv, S, D, causal): the suite's 12 problems
from tilewise.kernels import attention_gluon as ag
from tilewise.kernels import flash_attention as fa
from tilewise.model import traffic

HEADLINE = [(4, 32, 32, 4096, 128, False), (4, 32, 32, 4096, 128, True)]


def env() -> dict:
    """The row tags every results file carries (`tilewise.bench.harness.env_tags`: GPU, date, versions,
    host CPU, command, version / commit / dirty)."""
    return harness.env_tags("python3 " + " ".join(sys.argv))


def shape_name(b, h, hk, s, d, causal, sk=None):
    heads = f"H{h}" if hk == h else f"H{h}/{hk}"
    seq = f"S{s}" if sk is None or sk == s else f"Sq{s} Sk{sk}"
    return f"B{b} {heads} {seq} D{d} {'causal' if causal else 'non-causal'}"


# ------------------------------------------------------------------------ reference


def reference(q, k, v, causal, scale=None):
    """float64 softmax attention (bottom-right causal alignment), chunked over heads; out, lse (natural log)."""
    B, H, Sq, D = q.shape
    Hk, Sk = k.shape[1], k.shape[2]
    g = H // Hk
    sc = (1.0 / math.sqrt(D)) if scale is None else scale
    out = torch.empty((B, H, Sq, D), dtype=torch.float64, device=q.device)
    lse = torch.empty((B, H, Sq), dtype=torch.float64, device=q.device)
    i = torch.arange(Sq, device=q.device)[:, None]
    j = torch.arange(Sk, device=q.device)[None, :]
    mask = j <= i + (Sk - Sq)
    for b in range(B):
        for h in range(H):
            qq = q[b, h].double()
            kk = k[b, h // g].double()
            vv = v[b, h // g].double()
            s = (qq @ kk.T) * sc
            if causal:
                s = s.masked_fill(~mask, float("-inf"))
            m = s.amax(-1, keepdim=True)
            has = torch.isfinite(m)
            m0 = torch.where(has, m, torch.zeros_like(m))
            p = torch.exp(s - m0)
            lsum = p.sum(-1, keepdim=True)
            out[b, h] = torch.where(has, (p @ vv) / torch.where(has, lsum, torch.ones_like(lsum)), 0.0)
            lse[b, h] = torch.where(has, m0 + torch.log(lsum), torch.full_like(m0, float("-inf")))[:, 0]
    return out, lse


def check_case(design, dtype, B, H, Hk, Sq, Sk, D, causal, seed, layout="contiguous"):
    g = torch.Generator(device="cuda").manual_seed(seed)
    if layout == "bshd":  # [B, S, H, D] memory viewed as [B, H, S, D]: strided heads, TMA-legal
        q = torch.randn(B, Sq, H, D, device="cuda", dtype=dtype, generator=g).transpose(1, 2)
        k = torch.randn(B, Sk, Hk, D, device="cuda", dtype=dtype, generator=g).transpose(1, 2)
        v = torch.randn(B, Sk, Hk, D, device="cuda", dtype=dtype, generator=g).transpose(1, 2)
    else:
        q = torch.randn(B, H, Sq, D, device="cuda", dtype=dtype, generator=g)
        k = torch.randn(B, Hk, Sk, D, device="cuda", dtype=dtype, generator=g)
        v = torch.randn(B, Hk, Sk, D, device="cuda", dtype=dtype, generator=g)
    # poison: the kernel allocates its outputs; fill the allocator's cache with NaN first
    junk = torch.full((B * H * Sq * D * 2 + 4096,), float("nan"), device="cuda", dtype=torch.float32)
    del junk
    out, lse = ag.gluon_attention(q, k, v, causal=causal, design=design)
    torch.cuda.synchronize()
    ro, rl = reference(q, k, v, causal)
    err = (out.double() - ro).abs()
    tol_o = {torch.bfloat16: 2e-2, torch.float16: 4e-3}[dtype]
    fin = torch.isfinite(rl)
    lerr = (lse.double() - rl).abs()
    lerr = torch.where(fin, lerr, torch.where(torch.isneginf(lse.double()), 0.0, float("inf")))
    bad_o = int((~(err <= tol_o + tol_o * ro.abs())).sum())
    bad_l = int((~(lerr <= 1e-3 + 1e-3 * rl.abs().nan_to_num(0))).sum())
    return {
        "design": design,
        "dtype": str(dtype).replace("torch.", ""),
        "shape": shape_name(B, H, Hk, Sq, D, causal, Sk),
        "layout": layout,
        "max_abs_err_out": float(err.nan_to_num(float("inf")).max()),
        "max_abs_err_lse": float(lerr.max()),
        "bad_out": bad_o,
        "bad_lse": bad_l,
        "rows_without_keys": int((~fin).sum()),
        "ok": bad_o == 0 and bad_l == 0,
    }


CHECK_SHAPES = [  # (B, H, Hkv, Sq, Sk): lengths not a multiple of any block, GQA, Sq != Sk
    (1, 2, 1, 1, 1),
    (2, 4, 2, 1000, 1000),
    (1, 8, 8, 127, 300),
    (1, 4, 1, 300, 127),
    (1, 3, 3, 129, 7),
]


def run_check(out_dir, quick_full: bool, designs=("pingpong", "ring", "serial")):
    path = os.path.join(out_dir, "check.jsonl")
    f = open(path, "a")
    cases = []
    for design in designs:
        dtypes = (torch.bfloat16, torch.float16) if design == "pingpong" else (torch.bfloat16,)
        for dtype in dtypes:
            for D in (64, 128, 256):
                for causal in (False, True):
                    for shp in CHECK_SHAPES:
                        cases.append((design, dtype, *shp, D, causal, "contiguous"))
    cases.append(("pingpong", torch.bfloat16, 2, 8, 2, 513, 1031, 128, True, "bshd"))
    if quick_full:  # full size, every head dim, both masks (fp64 reference on the GPU)
        for D in (64, 128, 256):
            for causal in (False, True):
                cases.append(("pingpong", torch.bfloat16, 1, 4, 2, 4096 + 37, 4096 + 37, D, causal, "contiguous"))
    n_ok = 0
    for i, c in enumerate(cases):
        design, dtype, B, H, Hk, Sq, Sk, D, causal, layout = c
        _WATCH["case"] = (time.time(), str(c))
        try:
            r = check_case(design, dtype, B, H, Hk, Sq, Sk, D, causal, seed=1000 + i, layout=layout)
        except Exception as exc:
            r = {"design": design, "shape": shape_name(B, H, Hk, Sq, D, causal, Sk), "dtype": str(dtype),
                 "ok": False, "error": f"{type(exc).__name__}: {str(exc)[-1500:]}"}  # fmt: skip
        n_ok += bool(r.get("ok"))
        f.write(json.dumps(r) + "\n")
        f.flush()
        if not r.get("ok"):
            print("FAIL", json.dumps(r)[:600], flush=True)
    _WATCH["case"] = None
    print(f"check: {n_ok}/{len(cases)} ok", flush=True)
    return n_ok == len(cases)


# --------------------------------------------------------------------------- timing


def graph_ms(fn, reps=10, rounds=5):
    """Median ms per call, its samples and no flush-only samples (kept for the callers' unpacking):
    `tilewise.bench.timing` on a graph of one call, replayed `reps` times per round with the L2 flushed
    before each replay (outside the timed events)."""
    t = timing.time_calls({"x": timing.capture(lambda _i: fn())}, rounds=rounds, reps=reps)["x"]
    return max(t.median_ms, 1e-6), t.samples_ms, []


def sustained_peak_tflops():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    ms, _, _ = graph_ms(lambda: torch.mm(a, b), reps=5, rounds=5)
    return 2 * 8192**3 / ms / 1e9


def time_shape(B, H, Hk, S, D, causal, designs=("pingpong",), peers=True, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(B, Hk, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(B, Hk, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    flops = traffic.attention_flops(B, H, S, S, D, causal, exact_causal=False)  # SDPA's convention
    row = {"shape": shape_name(B, H, Hk, S, D, causal), "flops": flops}
    for d in designs:
        _WATCH["case"] = (time.time(), f"time {d} {row['shape']}")
        ms, _, _ = graph_ms(lambda d=d: ag.gluon_attention(q, k, v, causal=causal, design=d))
        row[f"{d}_ms"] = ms
        row[f"{d}_tflops"] = flops / ms / 1e9
    if peers:
        _WATCH["case"] = (time.time(), f"time peers {row['shape']}")
        os.environ["TILEWISE_GLUON"] = "0"
        ms, _, _ = graph_ms(lambda: fa.attention(q, k, v, causal=causal))
        os.environ["TILEWISE_GLUON"] = "1"
        row["triton_ms"] = ms
        row["triton_tflops"] = flops / ms / 1e9
        gqa = Hk != H
        ms, _, _ = graph_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa))
        row["sdpa_ms"] = ms
        row["sdpa_tflops"] = flops / ms / 1e9
        o1, _ = ag.gluon_attention(q, k, v, causal=causal)
        o2 = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        row["max_abs_diff_vs_sdpa"] = float((o1.float() - o2.float()).abs().max())
    _WATCH["case"] = None
    return row


def run_variants(peak, meta):
    """The ping-pong kernel with one choice changed at a time, on the headline shapes (+ D 64, D 256)."""
    import dataclasses

    rows = []
    plan = [
        ((4, 32, 32, 4096, 128, False), 128),
        ((4, 32, 32, 4096, 128, True), 128),
        ((4, 32, 32, 4096, 64, False), 64),
        ((2, 16, 16, 4096, 256, True), 256),
    ]
    for shp, D in plan:
        B, H, Hk, S, _, causal = shp
        base = ag.gluon_config(D, "pingpong")
        variants = [("default", base, None)]
        if D == 128:
            variants += [
                ("stages2", dataclasses.replace(base, stages=2), None),
                ("no_turn (2 consumers, no ping-pong order)", dataclasses.replace(base, pingpong=False), None),
                ("no_overlap (ping-pong, QK and PV not overlapped)", dataclasses.replace(base, overlap=False), None),
                ("ring + overlap (1 consumer of 8 warps)", dataclasses.replace(ag.gluon_config(D, "ring"),
                                                                              overlap=True), None),
                ("all heads in one group (no L2 grouping)", base, B * H),
                ("block_n 64, 4 stages", dataclasses.replace(base, block_n=64, stages=4), None),
            ]  # fmt: skip
        elif D == 64:
            variants += [("block_n 64", dataclasses.replace(base, block_n=64), None)]
        else:
            variants += [("block_n 32, 3 stages", dataclasses.replace(base, block_n=32, stages=3), None)]
        g = torch.Generator(device="cuda").manual_seed(D + causal)
        q = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(B, Hk, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(B, Hk, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
        flops = traffic.attention_flops(B, H, S, S, D, causal, exact_causal=False)
        ro = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        for name, cfg, group in variants:
            _WATCH["case"] = (time.time(), f"variant {name} {shp}")
            row = {"shape": shape_name(*shp), "variant": name, "config": dataclasses.asdict(cfg), "group": group}
            try:
                o, _ = ag.gluon_attention(q, k, v, causal=causal, config=cfg, group=group)
                row["max_abs_diff_vs_sdpa"] = float((o.float() - ro.float()).abs().max())
                ms, _, _ = graph_ms(
                    lambda cfg=cfg, group=group, q=q, k=k, v=v, causal=causal: ag.gluon_attention(
                        q, k, v, causal=causal, config=cfg, group=group
                    )
                )
                row.update(ms=ms, tflops=flops / ms / 1e9, fraction_of_sustained_peak=flops / ms / 1e9 / peak)
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {str(exc)[-800:]}"
            rows.append({**row, **meta})
            print(json.dumps(row)[:400], flush=True)
    _WATCH["case"] = None
    return rows


def run_schedule(peak, meta):
    """Scheduling choices of the ping-pong kernel, each against the current default, then adopt the winners.

    Knobs: Q requested after the first K/V tile (q_late), the mirrored tile order (snake), the L2 share
    of a head group. A knob's alternative is adopted when it is faster by > 1% in the mean time ratio
    over the shapes; the sweep that follows runs with the adopted settings (written in its meta).
    """
    import dataclasses

    plan = [
        (4, 32, 32, 4096, 128, False),
        (4, 32, 32, 4096, 128, True),
        (32, 16, 16, 512, 128, False),
        (32, 16, 16, 512, 128, True),
        (2, 16, 16, 4096, 256, True),
    ]
    alts = [("default", {}, None), ("q_late flipped", {"q_late": not ag.Q_LATE}, None),
            ("snake flipped", {"snake": not ag.SNAKE}, None)]  # fmt: skip
    alts += [(f"l2 fraction {f}", {}, f) for f in (0.1, 0.2, 0.8) if f != ag.L2_FRACTION]
    rows, ratio = [], {name: [] for name, _, _ in alts}
    for shp in plan:
        B, H, Hk, S, D, causal = shp
        g = torch.Generator(device="cuda").manual_seed(S + D + causal)
        q = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(B, Hk, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(B, Hk, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
        flops = traffic.attention_flops(B, H, S, S, D, causal, exact_causal=False)
        ro = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        base_ms = None
        for name, change, frac in alts:
            cfg = dataclasses.replace(ag.gluon_config(D, "pingpong"), **change)
            group = None if frac is None else ag.head_group(B * H, S, D, 2, fraction=frac)
            _WATCH["case"] = (time.time(), f"schedule {name} {shp}")
            row = {"shape": shape_name(*shp), "variant": name, "q_late": cfg.q_late, "snake": cfg.snake,
                   "group": group if group is not None else ag.head_group(B * H, S, D, 2)}  # fmt: skip
            try:
                o, _ = ag.gluon_attention(q, k, v, causal=causal, config=cfg, group=group)
                row["max_abs_diff_vs_sdpa"] = float((o.float() - ro.float()).abs().max())
                ms, _, _ = graph_ms(
                    lambda cfg=cfg, group=group, q=q, k=k, v=v, causal=causal: ag.gluon_attention(
                        q, k, v, causal=causal, config=cfg, group=group
                    )
                )
                row.update(ms=ms, tflops=flops / ms / 1e9, fraction_of_sustained_peak=flops / ms / 1e9 / peak)
                base_ms = ms if name == "default" else base_ms
                ratio[name].append(ms / base_ms)
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {str(exc)[-800:]}"
                ratio[name].append(float("inf"))
            rows.append({**row, **meta})
            print(json.dumps(row)[:300], flush=True)
    _WATCH["case"] = None
    mean = {n: sum(r) / len(r) for n, r in ratio.items() if r}
    if mean.get("q_late flipped", 9) < 0.99:
        ag.Q_LATE = not ag.Q_LATE
    if mean.get("snake flipped", 9) < 0.99:
        ag.SNAKE = not ag.SNAKE
    fr = {f: mean.get(f"l2 fraction {f}", 9) for f in (0.1, 0.2, 0.8)}
    best = min(fr, key=fr.get)
    if fr[best] < 0.99:
        ag.L2_FRACTION = best
    ag.gluon_config.cache_clear()
    chosen = {"q_late": ag.Q_LATE, "snake": ag.SNAKE, "l2_fraction": ag.L2_FRACTION, "mean_time_ratio": mean}
    print("adopted", json.dumps(chosen), flush=True)
    return rows, chosen


def run_interleaved(meta, rounds=9, reps=10):
    """Headline shapes: ours (through tilewise.kernels.attention) and SDPA graphs replayed alternately."""
    rows = []
    for i, (B, H, Hk, S, D, causal) in enumerate(HEADLINE):
        g = torch.Generator(device="cuda").manual_seed(500 + i)
        q = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(B, Hk, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(B, Hk, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
        flops = traffic.attention_flops(B, H, S, S, D, causal, exact_causal=False)
        ops = {
            "ours": lambda q=q, k=k, v=v, c=causal: fa.attention(q, k, v, causal=c),
            "sdpa": lambda q=q, k=k, v=v, c=causal: F.scaled_dot_product_attention(q, k, v, is_causal=c),
        }
        _WATCH["case"] = (time.time(), f"interleaved {B, H, S, D, causal}")
        graphs = {n: timing.capture(lambda _i, fn=fn: fn(), reps) for n, fn in ops.items()}
        timed = timing.time_calls(graphs, rounds=rounds)  # L2 flushed before each replay, order alternating
        times = {n: t.samples_ms for n, t in timed.items()}
        med = {n: t.median_ms for n, t in timed.items()}
        ratios = sorted(s / o for o, s in zip(times["ours"], times["sdpa"]))
        row = {
            "shape": shape_name(B, H, Hk, S, D, causal), "ours_ms": med["ours"], "sdpa_ms": med["sdpa"],
            "ours_tflops": flops / med["ours"] / 1e9, "sdpa_tflops": flops / med["sdpa"] / 1e9,
            "speedup_vs_sdpa_median_of_round_ratios": ratios[len(ratios) // 2],
            "speedup_vs_sdpa_min_max": [ratios[0], ratios[-1]], "rounds": rounds, "calls_per_round": reps,
            "ours_path": "tilewise.kernels.attention (dispatch) -> Gluon FA3 ping-pong",
            "timing": "CUDA graphs of 10 back-to-back calls, replayed alternately ours/SDPA, L2 zeroed before each replay",
            "ours_all_ms": times["ours"], "sdpa_all_ms": times["sdpa"], **meta,
        }  # fmt: skip
        rows.append(row)
        print(json.dumps({k: row[k] for k in list(row)[:9]}), flush=True)
    _WATCH["case"] = None
    return rows


# --------------------------------------------------------------------------- watchdog

_WATCH = {"case": None, "limit": 60.0, "out": None}


def _watchdog():
    while True:
        time.sleep(2)
        c = _WATCH["case"]
        if c is not None and time.time() - c[0] > _WATCH["limit"]:
            msg = f"HANG after {time.time() - c[0]:.0f}s in {c[1]}"
            print(msg, flush=True)
            if _WATCH["out"]:
                with open(os.path.join(_WATCH["out"], "hang.txt"), "w") as f:
                    f.write(msg + "\n")
            os._exit(3)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--check", action="store_true")
    p.add_argument("--full-check", action="store_true", help="add full-size (S 4133) checks")
    p.add_argument("--quick", action="store_true", help="time the two headline shapes, all designs")
    p.add_argument("--sweep", action="store_true")
    p.add_argument("--designs", action="store_true")
    p.add_argument("--ncu-design", default=None, help="serial | ring | pingpong | all")
    p.add_argument("--variants", action="store_true", help="time config variants of the ping-pong kernel")
    p.add_argument("--schedule", action="store_true", help="time scheduling choices, adopt the winners")
    p.add_argument("--interleave", action="store_true", help="headline shapes, ours and SDPA alternating")
    p.add_argument("--check-designs", default="pingpong,ring,serial")
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    return p


REPRODUCE_HEADLINE = (
    "python benchmarks/attention_fa3.py --interleave --out DIR  # the script writes its rows under --out; run by "
    "benchmarks/suites/quoted.sh; committed as benchmarks/results/h200/attention_fa3_headline.json"
)


def main(argv=None):
    a = build_parser().parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    _WATCH["out"] = a.out
    threading.Thread(target=_watchdog, daemon=True).start()
    meta = env()
    print(json.dumps(meta), flush=True)
    if a.ncu_design:  # one launch per design (the first compiles; ncu profiles kernels only)
        B, H, Hk, S, D, causal = HEADLINE[0]
        q = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)
        k, v = torch.randn_like(q), torch.randn_like(q)
        for d in ag.DESIGNS if a.ncu_design == "all" else [a.ncu_design]:
            ag.gluon_attention(q, k, v, causal=causal, design=d)
            torch.cuda.synchronize()
        return
    t0 = time.time()
    if a.check:
        run_check(a.out, a.full_check, a.check_designs.split(","))
        print(f"check took {time.time() - t0:.0f}s", flush=True)
    if a.quick:
        for shp in HEADLINE:
            r = time_shape(*shp, designs=ag.DESIGNS)
            print(json.dumps(r), flush=True)
            with open(os.path.join(a.out, "quick.jsonl"), "a") as f:
                f.write(json.dumps({**r, **meta}) + "\n")
    if a.sweep or a.designs or a.variants or a.schedule:
        peak = sustained_peak_tflops()
        print(f"sustained bf16 GEMM peak {peak:.0f} TFLOP/s", flush=True)
    if a.interleave:
        rows = run_interleaved(meta)
        head = {**meta, "reproduce": REPRODUCE_HEADLINE}
        with open(os.path.join(a.out, "attention_fa3_headline.json"), "w") as f:
            json.dump({"meta": head, "rows": rows}, f, indent=1)
    if a.schedule:
        rows, chosen = run_schedule(peak, meta)
        meta = {**meta, "schedule": chosen}
        with open(os.path.join(a.out, "attention_fa3_schedule.json"), "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    if a.variants:
        rows = run_variants(peak, meta)
        with open(os.path.join(a.out, "attention_fa3_variants.json"), "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    if a.sweep:
        rows = []
        for i, shp in enumerate(HEADLINE + SWEEP):
            r = time_shape(*shp, seed=i)
            r.update(
                kernel="attention_fa3",
                dtype="bf16",
                design="pingpong",
                measured_ms=r["pingpong_ms"],
                tflops=r["pingpong_tflops"],
                speedup_vs_sdpa=r["sdpa_ms"] / r["pingpong_ms"],
                speedup_vs_triton=r["triton_ms"] / r["pingpong_ms"],
                fraction_of_sustained_peak=r["pingpong_tflops"] / peak,
                sustained_peak_tflops=peak,
                headline=i < len(HEADLINE),
                timing="cuda graph, L2 flushed, median of 5 rounds x 10 calls",
                **meta,
            )
            rows.append(r)
            print(json.dumps(r), flush=True)
        sw = sorted(r["speedup_vs_sdpa"] for r in rows if not r["headline"])
        summary = {"sweep_median_speedup_vs_sdpa": sw[len(sw) // 2 - 1 : len(sw) // 2 + 1], "sustained_peak": peak}
        with open(os.path.join(a.out, "attention_fa3.json"), "w") as f:
            json.dump({"meta": {**meta, **summary}, "rows": rows}, f, indent=1)
    if a.designs:
        B, H, Hk, S, D, causal = HEADLINE[0]
        r = time_shape(B, H, Hk, S, D, causal, designs=ag.DESIGNS, peers=False, seed=99)
        rows = []
        from tilewise.model import pipeline

        num_m = S // ag.ROWS_PER_CTA
        # each head's K/V comes from HBM once (heads grouped to fit L2), then from L2 for its other query tiles
        times = pipeline.attention_tile_times(D, 128, 64, "bf16", hit_rate=1 - 1 / num_m, gpu="h200")
        for d in ag.DESIGNS:
            cfg = ag.gluon_config(D, d)
            tl = pipeline.simulate(d, tiles=S // cfg.block_n, load=times.load, mma=times.mma,
                                   softmax=times.softmax, stages=cfg.stages)  # fmt: skip
            rows.append({
                "design": {"serial": "a", "ring": "b", "pingpong": "c"}[d],
                "design_name": d,
                "shape": r["shape"],
                "block": f"M128 N{cfg.block_n} stages {cfg.stages} consumers {cfg.consumers}",
                "measured_ms": r[f"{d}_ms"],
                "tflops": r[f"{d}_tflops"],
                "fraction_of_sustained_peak": r[f"{d}_tflops"] / peak,
                "tc_active": None,
                "model_utilization": tl.tensor_utilisation,
                "model_inputs_cycles": {"load": times.load, "mma": times.mma, "softmax": times.softmax,
                                        "tiles": S // cfg.block_n, "stages": cfg.stages},
                **meta,
            })  # fmt: skip
        with open(os.path.join(a.out, "attention_fa3_designs.json"), "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
        print(json.dumps(rows), flush=True)
    print(f"total {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
