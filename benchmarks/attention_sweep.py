"""Attention forward and decode on the H200 beside their peers: the rows of attention_sweep.json / decode_sweep.json.

    python3 benchmarks/attention_sweep.py --part forward --out $OUT   # >= 30 forward problems
    python3 benchmarks/attention_sweep.py --part decode --out $OUT    # >= 20 decode problems
    python3 benchmarks/attention_sweep.py --part warm --shard 3/12    # compile one shard (fills Triton's cache)

Forward: FA3's benchmark grid (B*S = 16k, H*D = 2048; D 64/128/256 x S 512..16k x causal and not, fp16 and
bf16), GQA batches and B1 long contexts. Columns: ours through `tilewise.kernels.flash_attention.attention`
(the dispatch), the Triton kernel at its own config, SDPA's default backend (cuDNN on the H200), SDPA forced
onto its flash backend, FlashAttention-4's CuTe-DSL kernel where `flash_attn.cute` imports (PyPI flash-attn-4),
and the Gluon builds beside the shipped one: the other turn order (non-causal), the arithmetic round-robin tile
order (causal, `lpt=False`), the other consumer count (D 64), the Gluon build where the dispatch runs Triton.
Decode: batch 1-256, GQA groups 1-8, L 1k-128k, D 64/128/256, equal and ragged lengths. Columns: SDPA
(enable_gqa; ragged: padded to the longest with a mask) and ours as planned, at one split, and at the
advisor's split count with each merge placement; FlashAttention-4 (its split heuristic) on equal lengths.

Timing (`tilewise.bench.timing`): per problem every column is captured as a CUDA graph of `calls` calls
cycling over input copies (enough copies that the K/V of one cycle exceed L2 three times, at most 64),
replayed in rounds that alternate the columns; the same calls are also timed eagerly (launched back to back,
host cost included). Medians over rounds; p20/p80 kept. The committed rows were made by this script at the
commits they record, with its own copy of the same method (graphs of the same calls, 5 rounds alternating
the columns, no flush, medians); the shared timer replaced that copy afterwards, reversing every other
round's order and adding an untimed warm round. FLOPs: `tilewise.model.traffic.attention_flops` (SDPA's convention,
causal = half).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from tilewise.bench import timing
from tilewise.bench.harness import env_tags
from tilewise.kernels import attention_gluon as ag
from tilewise.kernels import decode as dec
from tilewise.kernels import flash_attention as fa
from tilewise.model import traffic

L2_BYTES = 60 * 2**20
# FlashAttention-3's forward on an H100 SXM5, FP16, B*S = 16k, H*D = 2048 (arXiv 2407.08608, Figure 5),
# TFLOP/s per S = 512 .. 16k, as read from the figure's bar labels (non-causal; D 256 causal too).
FA3_H100 = {
    (64, False): (197, 265, 371, 420, 460, 473),
    (128, False): (467, 565, 625, 638, 646, 648),
    (256, False): (482, 639, 707, 736, 746, 756),
    (256, True): (286, 427, 537, 612, 628, 642),
}
FA3_S = (512, 1024, 2048, 4096, 8192, 16384)


def forward_problems() -> list[tuple]:
    """(B, H, Hkv, S, D, causal, dtype)."""
    out = []
    for dtype in ("fp16", "bf16"):
        for d in (64, 128, 256):
            for s in FA3_S:
                for causal in (False, True):
                    out.append((16384 // s, 2048 // d, 2048 // d, s, d, causal, dtype))
    for causal in (False, True):  # GQA and long single sequences
        out += [(4, 32, 8, 4096, 128, causal, "bf16"), (2, 64, 8, 8192, 128, causal, "bf16"),
                (16, 32, 4, 1024, 128, causal, "bf16"), (1, 16, 16, 32768, 128, causal, "bf16"),
                (1, 32, 8, 65536, 128, causal, "bf16"), (4, 32, 8, 4096, 64, causal, "bf16")]  # fmt: skip
    return out


def decode_problems() -> list[tuple]:
    """(name, B, Hq, Hkv, lengths (int or (lo, hi) ragged), D, dtype)."""
    return [
        ("B1 Hq32 Hkv8 L128k D128", 1, 32, 8, 131072, 128, "bf16"),
        ("B1 Hq32 Hkv32 L32k D128", 1, 32, 32, 32768, 128, "bf16"),
        ("B1 Hq64 Hkv8 L64k D128", 1, 64, 8, 65536, 128, "bf16"),
        ("B1 Hq32 Hkv8 L1k D128", 1, 32, 8, 1024, 128, "bf16"),
        ("B4 Hq32 Hkv8 L16k D128", 4, 32, 8, 16384, 128, "bf16"),
        ("B4 Hq64 Hkv8 L128k D128", 4, 64, 8, 131072, 128, "bf16"),
        ("B8 Hq32 Hkv8 L32k D128", 8, 32, 8, 32768, 128, "bf16"),
        ("B16 Hq32 Hkv8 L8k D128", 16, 32, 8, 8192, 128, "bf16"),
        ("B32 Hq32 Hkv8 L2k D128", 32, 32, 8, 2048, 128, "bf16"),
        ("B32 Hq32 Hkv8 L4k D128", 32, 32, 8, 4096, 128, "bf16"),
        ("B64 Hq32 Hkv8 L2k D128", 64, 32, 8, 2048, 128, "bf16"),
        ("B64 Hq32 Hkv8 L4k D128", 64, 32, 8, 4096, 128, "bf16"),
        ("B128 Hq32 Hkv8 L1k D128", 128, 32, 8, 1024, 128, "bf16"),
        ("B256 Hq32 Hkv8 L1k D128", 256, 32, 8, 1024, 128, "bf16"),
        ("B128 Hq32 Hkv8 L4k D128 fp16", 128, 32, 8, 4096, 128, "fp16"),
        ("B32 Hq32 Hkv4 L8k D128", 32, 32, 4, 8192, 128, "bf16"),
        ("B2 Hq16 Hkv2 L64k D128", 2, 16, 2, 65536, 128, "bf16"),
        ("B16 Hq16 Hkv16 L4k D64", 16, 16, 16, 4096, 64, "bf16"),
        ("B64 Hq32 Hkv8 L2k D64", 64, 32, 8, 2048, 64, "bf16"),
        ("B8 Hq16 Hkv8 L16k D256", 8, 16, 8, 16384, 256, "bf16"),
        ("B32 Hq16 Hkv4 L4k D256", 32, 16, 4, 4096, 256, "bf16"),
        ("B1 Hq16 Hkv4 L32k D256", 1, 16, 4, 32768, 256, "bf16"),
        ("B32 Hq32 Hkv8 ragged 1k-64k D128", 32, 32, 8, (1024, 65536), 128, "bf16"),
        ("B64 Hq32 Hkv8 ragged 512-8k D128", 64, 32, 8, (512, 8192), 128, "bf16"),
        ("B8 Hq32 Hkv8 ragged 1k-32k D128", 8, 32, 8, (1024, 32768), 128, "bf16"),
    ]


DT = {"fp16": torch.float16, "bf16": torch.bfloat16}


# ------------------------------------------------------------------------------------------ timing


def time_columns(cols: dict, calls: int, rounds: int = 5, eager: set | None = None) -> dict:
    """cols: name -> fn(i) (i cycles over the input copies). Graph (and, for names in `eager`, eager) ms per
    call through `tilewise.bench.timing`: each column captured as a graph of `calls` calls, every side timed
    in alternating rounds, no flush (the copies rotate instead); medians, p20/p80 over the rounds."""
    graphs, errors = {}, {}
    for name, fn in cols.items():
        try:
            graphs[name] = timing.capture(fn, calls)
        except Exception as exc:  # a column that fails is recorded, not fatal
            errors[name] = f"{type(exc).__name__}: {str(exc)[:300]}"
    sides: dict = {f"{n}_graph": g for n, g in graphs.items()}
    for n, fn in cols.items():
        if (eager is None or n in eager) and n not in errors:
            sides[f"{n}_eager"] = lambda fn=fn: [fn(i) for i in range(calls)]
    out: dict = {}
    for k, t in timing.time_calls(sides, rounds=rounds, flush=False).items():
        per = calls if k.endswith("_eager") else 1  # an eager side is one run of `calls` calls
        out[f"{k}_ms"], out[f"{k}_p20_ms"], out[f"{k}_p80_ms"] = t.median_ms / per, t.p20_ms / per, t.p80_ms / per
    if errors:
        out["errors"] = errors
    graphs.clear()
    return out


def copies_for(nbytes: int) -> int:
    return max(1, min(64, math.ceil(3 * L2_BYTES / max(nbytes, 1))))


# ------------------------------------------------------------------------------------------ forward


def fa4_forward():
    """FlashAttention-4's CuTe-DSL forward (PyPI flash-attn-4) where it is installed, else None."""
    if os.environ.get("TILEWISE_NO_FA4") == "1":  # set where its smoke test failed (benchmarks/fa4_install.sh)
        return None
    try:
        from flash_attn.cute import flash_attn_func
    except Exception:  # not installed on this machine, or its CuTe DSL does not load
        return None
    return flash_attn_func


def forward_columns(B, H, Hk, S, D, causal, dtype, copies):
    """Columns: ours (the dispatch), cuDNN, SDPA flash, the Triton kernel at its own config, FlashAttention-4
    where installed, and the Gluon build beside the shipped one (the other turn order, the round-robin causal
    order, the other consumer count at D 64) so that every dispatch rule is checked in the same run."""
    dt = DT[dtype]
    g = torch.Generator(device="cuda").manual_seed(S + D + causal)
    qs = [torch.randn(B, H, S, D, device="cuda", dtype=dt, generator=g) for _ in range(copies)]
    ks = [torch.randn(B, Hk, S, D, device="cuda", dtype=dt, generator=g) for _ in range(copies)]
    vs = [torch.randn(B, Hk, S, D, device="cuda", dtype=dt, generator=g) for _ in range(copies)]
    gqa = Hk != H

    def sdpa(i):
        return F.scaled_dot_product_attention(qs[i % copies], ks[i % copies], vs[i % copies], is_causal=causal,
                                              enable_gqa=gqa)  # fmt: skip

    def flash(i):
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return sdpa(i)

    tcfg = fa.forward_config(D, causal, dt, S, batch=B, heads=H, kv_heads=Hk, seq_k=S, gpu="h200")
    cols = {
        "ours": lambda i: fa.attention(qs[i % copies], ks[i % copies], vs[i % copies], causal=causal),
        "cudnn": sdpa,
        "flash": flash,
        "triton": lambda i: fa.attention(qs[i % copies], ks[i % copies], vs[i % copies], causal=causal, config=tcfg),
    }
    fa4 = fa4_forward()
    if fa4 is not None:  # FlashAttention-4 reads [B, S, H, D]: the same memory, transposed views
        cols["fa4"] = lambda i: fa4(qs[i % copies].transpose(1, 2), ks[i % copies].transpose(1, 2),
                                    vs[i % copies].transpose(1, 2), causal=causal)  # fmt: skip
    rows = ag.cta_rows(D, S, causal)
    nprog = min(132, B * H * -(-S // rows))
    group = ag.dispatch_group(B * H, S, S, D, 2, causal, nprog, H // Hk)
    shipped = ag.shape_config(D, dtype, B * H, S, S, causal, nprog, group)
    alts = {}
    if causal:  # the arithmetic round-robin order (every grid-th tile, mirrored every other round)
        alts["gluon_rr"] = dataclasses.replace(shipped, lpt=False)
    elif shipped.consumers == 2:
        alts["gluon_turn" if not shipped.pingpong else "gluon_noturn"] = dataclasses.replace(
            shipped, pingpong=not shipped.pingpong
        )
    if D == 64:  # the other consumer count
        other = 2 if shipped.consumers == 3 else 3
        alt = ag.gluon_config(64, "pingpong", dtype, consumers=other)
        turn = other == 2 and (causal or S < ag.TURN_FREE_KEYS[False])
        alts[f"gluon_c{other}"] = dataclasses.replace(alt, pingpong=turn, lpt=shipped.lpt)
    if not ag.dispatches(D, S, causal):  # "ours" runs the Triton kernel: the Gluon build it would take beside it
        alts["gluon"] = shipped
    for name, cfg in alts.items():
        cols[name] = lambda i, cfg=cfg: ag.gluon_attention(qs[i % copies], ks[i % copies], vs[i % copies],
                                                           causal=causal, config=cfg)  # fmt: skip
    return cols, (qs[0], ks[0], vs[0])


def run_forward(out_dir, meta, only_warm=None):
    rows = []
    probs = forward_problems()
    for n, (B, H, Hk, S, D, causal, dtype) in enumerate(probs):
        if only_warm is not None and n % only_warm[1] != only_warm[0]:
            continue
        nbytes = (2 * B * H * S * D + 2 * B * Hk * S * D) * 2
        copies = 1 if only_warm else min(copies_for(nbytes), 4)
        cols, (q, k, v) = forward_columns(B, H, Hk, S, D, causal, dtype, copies)
        if only_warm:
            for fn in cols.values():
                try:
                    fn(0)
                except Exception:  # a warm-up failure shows again in the timed run
                    pass
            torch.cuda.synchronize()
            continue
        flops = traffic.attention_flops(B, H, S, S, D, causal, exact_causal=False)
        calls = max(3, min(20, int(2e-3 / max(flops / 600e12, 1e-6))))
        t = time_columns(cols, calls, rounds=5, eager={"ours", "cudnn"})
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=Hk != H).float()
        errs = {}
        for name in cols:
            if name not in ("cudnn", "flash") and name not in t.get("errors", {}):
                o = cols[name](0)
                o = o[0] if isinstance(o, tuple) else o
                o = o.transpose(1, 2) if name == "fa4" else o
                errs[f"max_abs_diff_{name}_vs_cudnn"] = float((o.float() - ref).abs().max())
        heads = f"H{H}" if H == Hk else f"H{H}/{Hk}"
        row = {"shape": f"B{B} {heads} S{S} D{D} {'causal' if causal else 'non-causal'}", "dtype": dtype,
               "batch": B, "heads": H, "kv_heads": Hk, "seq": S, "head_dim": D, "causal": causal, "flops": flops,
               "calls_per_graph": calls, "input_copies": copies, **t, **errs}  # fmt: skip
        for name in cols:
            ms = t.get(f"{name}_graph_ms")
            if ms:
                row[f"{name}_tflops"] = flops / ms / 1e9
        if t.get("ours_graph_ms") and t.get("cudnn_graph_ms"):
            row["speedup_graph"] = t["cudnn_graph_ms"] / t["ours_graph_ms"]
        if t.get("ours_eager_ms") and t.get("cudnn_eager_ms"):
            row["speedup_eager"] = t["cudnn_eager_ms"] / t["ours_eager_ms"]
        if t.get("ours_graph_ms") and t.get("fa4_graph_ms"):
            row["speedup_vs_fa4_graph"] = t["fa4_graph_ms"] / t["ours_graph_ms"]
        fa3 = FA3_H100.get((D, causal))
        if fa3 and S in FA3_S and B * S == 16384 and H * D == 2048:
            row["fa3_h100_fp16_tflops_published"] = fa3[FA3_S.index(S)]
        row.update(meta)
        rows.append(row)
        print(json.dumps({"shape": row["shape"], "dtype": dtype, "speedup_graph": row.get("speedup_graph"),
                          **{k: round(v) for k, v in row.items() if k.endswith("_tflops")}}), flush=True)  # fmt: skip
        del cols, q, k, v
        with open(os.path.join(out_dir, "attention_sweep.json"), "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return rows


# ------------------------------------------------------------------------------------------ decode


def decode_columns(B, Hq, Hk, lens, D, dtype, copies):
    dt = DT[dtype]
    g = torch.Generator(device="cuda").manual_seed(B * 7 + D)
    if isinstance(lens, tuple):  # ragged: lengths spread evenly over [lo, hi], shuffled
        lo, hi = lens
        ll = [lo + (hi - lo) * i // max(1, B - 1) for i in range(B)]
        perm = torch.randperm(B, generator=torch.Generator().manual_seed(B)).tolist()
        ll = [ll[p] for p in perm]
    else:
        ll = [lens] * B
    L = max(ll)
    qs = [torch.randn(B, Hq, 1, D, device="cuda", dtype=dt, generator=g) for _ in range(copies)]
    ks = [torch.randn(B, Hk, L, D, device="cuda", dtype=dt, generator=g) for _ in range(copies)]
    vs = [torch.randn(B, Hk, L, D, device="cuda", dtype=dt, generator=g) for _ in range(copies)]
    lens_d = torch.tensor(ll, device="cuda", dtype=torch.int32)
    uniform = len(set(ll)) == 1
    mask = None if uniform else (torch.arange(L, device="cuda")[None, :] < lens_d[:, None])[:, None, None, :]
    name = {torch.float16: "fp16", torch.bfloat16: "bf16"}[dt]
    gpu = dec.gpu_key(qs[0].device)
    adv = dec.advised_plan(B, Hq, Hk, L, D, dt, gpu)
    bn, w, st, s_adv = adv if adv is not None else (*dec.default_tile(D, 2), 1)
    mg, me = dec.merge_placement(B, Hq, Hk, L, D, dt, gpu, bn, w, st, s_adv)

    def sdpa(i):
        return F.scaled_dot_product_attention(qs[i % copies], ks[i % copies], vs[i % copies], attn_mask=mask,
                                              enable_gqa=Hk != Hq)  # fmt: skip

    def ours(splits, merge):
        return lambda i: dec.decode_attention(
            qs[i % copies],
            ks[i % copies],
            vs[i % copies],
            lens_d,
            max_seq_len=L,
            tile=(bn, w, st),
            num_splits=splits,
            merge=merge,
        )

    cols = {"sdpa": sdpa, "ours": lambda i: dec.decode_attention(qs[i % copies], ks[i % copies], vs[i % copies],
                                                                   lens_d, max_seq_len=L)}  # fmt: skip
    cols["s1"] = ours(1, "inline")
    # the model's split count with each merge placement (the tile x split x merge grid behind the choice is
    # benchmarks/probes/decode_variants.py's)
    if s_adv > 1:
        for m in ("inline", "launch"):
            cols[f"s{s_adv}_{m}"] = ours(s_adv, m)
    fa4 = fa4_forward()
    if fa4 is not None and uniform:  # FlashAttention-4, [B, S, H, D] views, its own split heuristic (num_splits=0)
        cols["fa4"] = lambda i: fa4(qs[i % copies].transpose(1, 2), ks[i % copies].transpose(1, 2),
                                    vs[i % copies].transpose(1, 2), num_splits=0)  # fmt: skip
    info = {"lens_min": min(ll), "lens_max": L, "tile": [bn, w, st], "advisor_splits": s_adv,
            "model_merge_graph": mg, "model_merge_eager": me, "problem": {"batch": B, "heads": Hq, "kv_heads": Hk,
            "seq_len": L, "head_dim": D, "dtype": name}, "total_keys": sum(ll)}  # fmt: skip
    return cols, info, (qs[0], ks[0], vs[0], lens_d, mask, ll)


def reference_decode(q, k, v, ll):
    B, Hq, _, D = q.shape
    Hk = k.shape[1]
    out = torch.empty(B, Hq, D, dtype=torch.float64, device=q.device)
    for b in range(B):
        kk = k[b, :, : ll[b]].double().repeat_interleave(Hq // Hk, 0)
        vv = v[b, :, : ll[b]].double().repeat_interleave(Hq // Hk, 0)
        s = (q[b, :, 0].double()[:, None, :] @ kk.transpose(1, 2))[:, 0] / math.sqrt(D)
        out[b] = (torch.softmax(s, -1)[:, None, :] @ vv)[:, 0]
    return out


def run_decode(out_dir, meta, only_warm=None):
    rows = []
    for n, (name, B, Hq, Hk, lens, D, dtype) in enumerate(decode_problems()):
        if only_warm is not None and n % only_warm[1] != only_warm[0]:
            continue
        L = lens[1] if isinstance(lens, tuple) else lens
        copies = 1 if only_warm else copies_for(2 * B * Hk * L * D * 2)
        cols, info, (q, k, v, _lens, mask, ll) = decode_columns(B, Hq, Hk, lens, D, dtype, copies)
        if only_warm:
            for fn in cols.values():
                fn(0)
            torch.cuda.synchronize()
            continue
        calls = max(copies, 20)
        t = time_columns(cols, calls, rounds=5)
        ref = reference_decode(q, k, v, ll) if Hq * L * D * 8 <= 2**29 and B * Hq * L <= 2**25 else None
        so = cols["sdpa"](0).reshape(B, Hq, D).double()
        errs = {}
        for c in ("ours", "s1", *[c for c in cols if c.endswith("_launch")][:1], *[c for c in cols if c == "fa4"]):
            if c in t.get("errors", {}):
                continue
            o = cols[c](0)
            o = (o[0] if isinstance(o, tuple) else o).reshape(B, Hq, D).double()
            errs[f"max_abs_diff_{c}_vs_sdpa"] = float((o - so).abs().max())
            if ref is not None:
                errs[f"max_abs_err_{c}_vs_fp64"] = float((o - ref).abs().max())
        if ref is not None:
            errs["max_abs_err_sdpa_vs_fp64"] = float((so - ref).abs().max())
        kv_bytes = 2 * Hk * sum(ll) * D * 2
        row = {"shape": name, "kernel": "decode_attention", "peer": "sdpa(enable_gqa)" + ("" if mask is None else
               ", padded to the longest + mask"), **info, "calls_per_graph": calls, "input_copies": copies, **t,
               **errs, "kv_bytes": kv_bytes}  # fmt: skip
        if t.get("ours_graph_ms") and t.get("sdpa_graph_ms"):
            row["speedup_graph"] = t["sdpa_graph_ms"] / t["ours_graph_ms"]
            row["ours_tbps_graph"] = kv_bytes / t["ours_graph_ms"] / 1e9
        if t.get("ours_eager_ms") and t.get("sdpa_eager_ms"):
            row["speedup_eager"] = t["sdpa_eager_ms"] / t["ours_eager_ms"]
        if t.get("ours_graph_ms") and t.get("fa4_graph_ms"):
            row["speedup_vs_fa4_graph"] = t["fa4_graph_ms"] / t["ours_graph_ms"]
        row.update(meta)
        rows.append(row)
        print(json.dumps({k: row.get(k) for k in ("shape", "advisor_splits", "fa4_graph_ms", "model_merge_graph", "ours_graph_ms",
                                                  "sdpa_graph_ms", "speedup_graph", "speedup_eager")}), flush=True)  # fmt: skip
        del cols
        with open(os.path.join(out_dir, "decode_sweep.json"), "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return rows


NCU_PROBLEMS = [(4, 32, 32, 4096, 64, False, "fp16"), (1, 16, 16, 16384, 128, True, "fp16"),
                (2, 8, 8, 8192, 256, False, "fp16")]  # fmt: skip


def run_ncu():
    """One call of the Gluon kernel per problem (compiled beforehand), for Nsight Compute's tensor-pipe counters."""
    for B, H, Hk, S, D, causal, dtype in NCU_PROBLEMS:
        q = torch.randn(B, H, S, D, device="cuda", dtype=DT[dtype])
        k, v = torch.randn(B, Hk, S, D, device="cuda", dtype=DT[dtype]), torch.randn(B, Hk, S, D, device="cuda",
                                                                                   dtype=DT[dtype])  # fmt: skip
        ag.gluon_attention(q, k, v, causal=causal)
        torch.cuda.synchronize()


REPRODUCE = {
    "forward": "bash benchmarks/attention_sweep_device.sh  (on the device, OUT set; then copy $OUT/attention_sweep.json "
    "to benchmarks/results/h200/attention_sweep.json and run python benchmarks/attention_sweep_report.py --write)",
    "decode": "bash benchmarks/attention_sweep_device.sh  (on the device, OUT set; then copy $OUT/decode_sweep.json to "
    "benchmarks/results/h200/decode_sweep.json)",
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--part", choices=("forward", "decode", "warm", "ncu"), required=True)
    p.add_argument("--shard", default=None, help="i/n: the warm part compiles every n-th problem from i")
    p.add_argument("--warm-only", choices=("decode", "forward"), default=None, help="warm one part's columns only")
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    meta = env_tags("python3 " + " ".join(sys.argv))
    meta["commit"] = os.environ.get("TILEWISE_COMMIT", "unknown")
    meta["timing"] = (
        "CUDA graphs of calls_per_graph calls over input_copies copies, 5 rounds alternating columns; eager: the same calls launched back to back"
    )
    t0 = time.time()
    if a.part == "ncu":
        run_ncu()
        return
    if a.part == "warm":
        i, n = (int(x) for x in a.shard.split("/"))
        if a.warm_only != "forward":
            run_decode(a.out, meta, only_warm=(i, n))
        if a.warm_only != "decode":
            run_forward(a.out, meta, only_warm=(i, n))
    elif a.part == "forward":
        run_forward(a.out, {**meta, "reproduce": REPRODUCE["forward"]})
    else:
        run_decode(a.out, {**meta, "reproduce": REPRODUCE["decode"]})
    print(f"{a.part} took {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
