"""Gluon forward variants beside cuDNN on short sequences and D 64: consumers, Q buffers, head groups, turn order.

    python3 benchmarks/probes/attention_fwd_variants.py --warm 3/12     # compile shard 3 of 12 (no timing)
    python3 benchmarks/probes/attention_fwd_variants.py --out $OUT/attention_fwd_variants.json

Which ping-pong build the dispatch should take where the sweep trails cuDNN (S 512-2k at every head dim, D 64
everywhere) is a question of measurement. Per problem (FA3's grid: B*S = 16k, H*D = 2048, plus GQA rows),
every column is captured as a CUDA graph of the same calls over input copies and the columns are replayed
in alternating rounds (`tilewise.bench.timing` through `attention_sweep.time_columns`: medians, p20/p80).

With `--xtile`: `cudnn`, `ours` and `xtile_q{1,2}`, the dispatch's build with the overlapped loop run across CTA
tiles, one or two Q buffers. With `--store`: `cudnn`, `ours` and `store{4,8,16}`, the dispatch's build with each
way the epilogue stores O (`attention_gluon._epilogue`: bytes a thread stores at once; 16 only where its shared
memory fits, and where it does not, `s{stages}store{8,16}` with one K/V stage fewer), on FA3's grid where the
dispatch runs the Gluon kernel (`--head-dim` keeps one head dim). Otherwise: `cudnn` (SDPA's default backend), `ours` (the dispatch), and
`c{consumers}q{q_bufs}[_noturn][_g{heads}]`:
the ping-pong kernel with 2 or 3 consumer warpgroups (3 only at D 64, whose registers allow it), one or two Q
buffers per consumer, with or without the consumers' turn order, and the persistent order's head group
(`head_group`'s default, or a fixed count of heads). Every column's output is checked against cuDNN's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from attention_sweep import DT, time_columns

from tilewise.bench.harness import env_tags
from tilewise.kernels import attention_gluon as ag
from tilewise.kernels import flash_attention as fa
from tilewise.model import traffic


def problems() -> list[tuple]:
    """(B, H, Hkv, S, D, causal, dtype)."""
    out = []
    for d in (64, 128, 256):
        for s in (512, 1024, 2048, 8192):
            for causal in (False, True):
                out.append((16384 // s, 2048 // d, 2048 // d, s, d, causal, "bf16"))
    out += [(16, 32, 4, 1024, 128, False, "bf16"), (16, 32, 4, 1024, 128, True, "bf16"),
            (4, 32, 8, 4096, 64, False, "bf16"), (32, 32, 32, 512, 64, False, "fp16")]  # fmt: skip
    return out


def variants(d: int, s: int, dtype: str) -> dict[str, ag.GluonConfig]:
    """The builds to time at one head dim: consumers x Q buffers (where they fit), turn order on and off."""
    out = {}
    for cons in (2, 3) if d == 64 else (2,):
        for qb in (1, 2):
            try:
                cfg = ag.gluon_config(d, "pingpong", dtype, consumers=cons, q_bufs=qb)
            except Exception:  # 2 Q buffers leave too little shared memory at D 256
                continue
            out[f"c{cons}q{qb}"] = cfg
            out[f"c{cons}q{qb}_noturn"] = dataclasses.replace(cfg, pingpong=False)
    return out


def xtile_variants(B: int, H: int, Hk: int, S: int, D: int, causal: bool, dtype: str) -> dict[str, ag.GluonConfig]:
    """The dispatch's own build with the overlapped loop run across CTA tiles (`xtile`), with one and two Q
    buffers (two where they leave 2 K/V stages)."""
    shipped = ag.problem_busiest(B * H, S, D, causal, dtype, 132, H // Hk)[0]  # the dispatch's own config
    out = {}
    for qb in (1, 2):
        try:
            cfg = ag.gluon_config(D, "pingpong", dtype, consumers=shipped.consumers, q_bufs=qb, xtile=True)
        except Exception:  # 2 Q buffers do not fit at D 256
            continue
        out[f"xtile_q{qb}"] = dataclasses.replace(cfg, pingpong=shipped.pingpong, lpt=shipped.lpt)
    return out


def store_variants(B: int, H: int, Hk: int, S: int, D: int, causal: bool, dtype: str) -> dict[str, ag.GluonConfig]:
    """The dispatch's own build with each O store width its shared memory allows."""
    shipped = ag.problem_busiest(B * H, S, D, causal, dtype, 132, H // Hk)[0]
    widths = (4, 8, 16) if shipped.store_bytes == 16 else (4, 8)
    out = {f"store{w}": dataclasses.replace(shipped, store_bytes=w) for w in widths}
    if shipped.store_bytes != 16:  # a K/V stage fewer leaves the 16-byte store its shared memory (D 128)
        fewer = shipped.stages - 1
        out[f"s{fewer}store16"] = dataclasses.replace(shipped, stages=fewer, store_bytes=16)
        out[f"s{fewer}store8"] = dataclasses.replace(shipped, stages=fewer, store_bytes=8)
    return out


def store_problems(head_dims: tuple[int, ...] = (64, 128, 256)) -> list[tuple]:
    """FA3's grid (B*S = 16k, H*D = 2048) at S 512 - 16k, bf16, where the dispatch runs the Gluon kernel."""
    out = []
    for d in head_dims:
        for s in (512, 1024, 2048, 4096, 16384):
            for causal in (False, True):
                if ag.dispatches(d, s, causal):
                    out.append((16384 // s, 2048 // d, 2048 // d, s, d, causal, "bf16"))
    return out


def columns(B, H, Hk, S, D, causal, dtype, copies=2, xtile=False, store=False):
    dt = DT[dtype]
    g = torch.Generator(device="cuda").manual_seed(S + D + causal)
    qs = [torch.randn(B, H, S, D, device="cuda", dtype=dt, generator=g) for _ in range(copies)]
    ks = [torch.randn(B, Hk, S, D, device="cuda", dtype=dt, generator=g) for _ in range(copies)]
    vs = [torch.randn(B, Hk, S, D, device="cuda", dtype=dt, generator=g) for _ in range(copies)]
    gqa = Hk != H

    def cudnn(i):
        return F.scaled_dot_product_attention(qs[i % copies], ks[i % copies], vs[i % copies], is_causal=causal,
                                              enable_gqa=gqa)  # fmt: skip

    cols = {
        "cudnn": cudnn,
        "ours": lambda i: fa.attention(qs[i % copies], ks[i % copies], vs[i % copies], causal=causal),
    }
    if xtile or store:  # only the dispatch beside its cross-tile builds / its store widths
        builds = xtile_variants if xtile else store_variants
        for name, cfg in builds(B, H, Hk, S, D, causal, dtype).items():
            cols[name] = lambda i, cfg=cfg: ag.gluon_attention(qs[i % copies], ks[i % copies], vs[i % copies],
                                                               causal=causal, config=cfg)  # fmt: skip
        return cols
    for name, cfg in variants(D, S, dtype).items():
        if causal and cfg.lpt:  # the host's longest-first table where it balances better (as the dispatch)
            rows = cfg.rows_per_cta
            num_m = -(-S // rows)
            grp = ag.head_group(B * H, S, D, 2)
            lpt = ag.use_lpt(B * H, num_m, grp, S, S, cfg.block_n, min(132, B * H * num_m), cfg.snake, rows)
            cfg = dataclasses.replace(cfg, lpt=lpt)
        cols[name] = lambda i, cfg=cfg: ag.gluon_attention(qs[i % copies], ks[i % copies], vs[i % copies],
                                                           causal=causal, config=cfg)  # fmt: skip
        if name in ("c2q1", "c3q1", "c2q2") and S <= 2048:  # smaller head groups on short sequences
            for heads in (8, 24):
                cols[f"{name}_g{heads}"] = lambda i, cfg=cfg, heads=heads: ag.gluon_attention(
                    qs[i % copies], ks[i % copies], vs[i % copies], causal=causal, config=cfg, group=heads
                )
    return cols


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--warm", default=None, help="i/n: compile shard i of n, no timing")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--xtile", action="store_true", help="time the dispatch beside its cross-tile builds only")
    ap.add_argument("--store", action="store_true", help="time the dispatch beside its O store widths only")
    ap.add_argument("--head-dim", type=int, choices=(64, 128, 256), default=None, help="--store: one head dim only")
    a = ap.parse_args()
    shard = tuple(int(x) for x in a.warm.split("/")) if a.warm else None
    meta = env_tags()
    rows = []
    t0 = time.time()
    for n, (B, H, Hk, S, D, causal, dtype) in enumerate(
        (store_problems((a.head_dim,) if a.head_dim else (64, 128, 256))) if a.store else problems()
    ):
        if shard is not None and n % shard[1] != shard[0]:
            continue
        if a.xtile and not ag.dispatches(D, S, causal):
            continue
        cols = columns(B, H, Hk, S, D, causal, dtype, copies=1 if shard else 2, xtile=a.xtile, store=a.store)
        if shard is not None:
            for fn in cols.values():
                try:
                    fn(0)
                except Exception as exc:  # shown again by the timed run
                    print(f"warm {B} {H} {S} {D} {causal}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            torch.cuda.synchronize()
            continue
        flops = traffic.attention_flops(B, H, S, S, D, causal, exact_causal=False)
        calls = max(3, min(20, int(2e-3 / max(flops / 600e12, 1e-6))))
        t = time_columns(cols, calls, rounds=a.rounds)
        ref = cols["cudnn"](0).float()
        errs = {}
        for name, fn in cols.items():
            if name != "cudnn" and name not in t.get("errors", {}):
                o = fn(0)
                o = o[0] if isinstance(o, tuple) else o
                errs[name] = float((o.float() - ref).abs().max())
        heads = f"H{H}" if H == Hk else f"H{H}/{Hk}"
        row = {"shape": f"B{B} {heads} S{S} D{D} {'causal' if causal else 'non-causal'}", "dtype": dtype,
               "batch": B, "heads": H, "kv_heads": Hk, "seq": S, "head_dim": D, "causal": causal, "flops": flops,
               "calls_per_graph": calls, **t, "max_abs_diff_vs_cudnn": errs}  # fmt: skip
        for name in cols:
            ms = t.get(f"{name}_graph_ms")
            if ms:
                row[f"{name}_tflops"] = flops / ms / 1e9
        row.update(meta)
        rows.append(row)
        best = max((k for k in cols if k != "cudnn" and row.get(f"{k}_tflops")), key=lambda k: row[f"{k}_tflops"])
        print(json.dumps({"shape": row["shape"], "cudnn": round(row.get("cudnn_tflops", 0)),
                          "ours": round(row.get("ours_tflops", 0)), "best": best,
                          "best_tflops": round(row[f"{best}_tflops"]), "s": round(time.time() - t0)}), flush=True)  # fmt: skip
        if a.out:
            with open(a.out, "w") as f:
                json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
