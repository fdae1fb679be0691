"""Split-KV decode variants beside SDPA on the decode sweep's 25 problems: key tile x split count x merge placement.

    python3 benchmarks/probes/decode_variants.py --warm 3/15          # compile shard 3 of 15 (no timing)
    python3 benchmarks/probes/decode_variants.py --out $OUT/decode_variants.json

Which split count and merge placement the time model should choose (`tilewise.model.predict`'s decode
family) is a question of measurement: per problem (`benchmarks/attention_sweep.py`'s `decode_problems`), every
column is captured as a CUDA graph of the same calls over input copies that exceed L2 three times, and the
columns are replayed in alternating rounds (`tilewise.bench.timing`, medians and p20/p80); small problems
(SDPA under 80 us, where the host binds an eager call) are also timed eagerly, calls launched back to back.

Columns: `sdpa` (enable_gqa; ragged lengths padded to the longest with a mask), `ours` (the committed
default plan), and `n{BLOCK_N}w{warps}s{stages}_x{splits}_{inline|launch}` for the key tiles of `TILES`
that fit the kernel's shared-memory budget, at split counts around one and two full generations of
programs (`split_grid`), each merge placement where it is in doubt (`placements`).

Compiling is most of the cost: every distinct kernel (tile, GQA group, head dim, dtype, kind) is compiled
once, by the warm shards in parallel processes, on a small problem of the same specialisation.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from attention_sweep import DT, copies_for, decode_problems

from tilewise.bench import timing
from tilewise.bench.harness import env_tags
from tilewise.kernels import decode as dec
from tilewise.model import tiles as model_tiles

# The advisor's key tiles (tilewise.advise.space.DECODE_TILES) and three more: 32-key tiles at 3 stages (four
# programs per SM at D 128), 64-key tiles 5 deep (four tiles in flight), 64-key tiles on 8 warps.
TILES = ((32, 4, 2), (64, 4, 2), (64, 4, 3), (128, 4, 2), (128, 4, 3), (128, 8, 3), (32, 4, 3), (64, 4, 5), (64, 8, 3))
SPLITS = (1, 2, 4, 8, 16, 32, 64, 128)
SMS = 132
SMEM_SM = 227 * 1024  # the H200's shared memory per SM available to blocks


def per_sm(bn: int, w: int, st: int, d: int, e: int) -> int:
    """Programs of this tile resident per SM: shared memory (the kernel's K/V stages), at most 64 warps."""
    return max(1, min(SMEM_SM // model_tiles.decode_smem_bytes(bn, d, st, e), 64 // w))


def split_grid(pairs: int, L: int, bn: int, slots: int, fill: float = 1.0) -> list[int]:
    """Split counts for `pairs` (sequence, KV head) pairs of L keys on `slots` resident programs: the powers of
    two and the counts that fill one and two generations, each split keeping >= 1 key tile, from a quarter
    of the slots busy (or the most splits there are) to 3 generations (or twice one split's). `fill`: the mean
    length over the longest (ragged lengths: splits past a sequence's end load nothing)."""
    busy = pairs * fill
    full = [int(slots // busy), int(2 * slots // busy)]
    most = math.ceil(L / bn)
    top = max(3, 2 * math.ceil(busy / slots))
    out = set()
    for s in (*SPLITS, *full):
        if s < 1 or s > 128:
            continue
        chunk = math.ceil(math.ceil(L / s) / bn) * bn
        eff = math.ceil(L / chunk)  # the split count the kernel runs
        if (4 * busy * eff >= slots or eff == most) and math.ceil(busy * eff / slots) <= top:
            out.add(eff)
    return sorted(out)


def placements(splits: int, gens: int, tile: tuple[int, int, int]) -> tuple[str, ...]:
    """Both placements where the model's rule is in doubt (several generations; three tiles at one), else inline."""
    if splits == 1:
        return ("inline",)
    if gens >= 2 or tile in ((64, 4, 3), (128, 4, 3), (32, 4, 3)):
        return ("inline", "launch")
    return ("inline",)


def columns_for(B, Hq, Hk, L, D, dtype, fill=1.0):
    """[(name, tile, splits, merge, programs, generations)] of one problem (`fill`: mean length / longest)."""
    e = 4 if dtype == "fp32" else 2
    out = []
    for bn, w, st in TILES:
        if model_tiles.decode_smem_bytes(bn, D, st, e) > dec.DECODE_SMEM:
            continue
        slots = SMS * per_sm(bn, w, st, D, e)
        for s in split_grid(B * Hk, L, bn, slots, fill):
            gens = math.ceil(B * Hk * s * fill / slots)
            for m in placements(s, gens, (bn, w, st)):
                out.append((f"n{bn}w{w}s{st}_x{s}_{m}", (bn, w, st), s, m, B * Hk * s, gens))
    return out


def fill_of(lens) -> float:
    """Mean length over the longest: the ragged problems' lengths are spread evenly over [lo, hi]."""
    return (lens[0] + lens[1]) / 2 / lens[1] if isinstance(lens, tuple) else 1.0


def make_inputs(B, Hq, Hk, lens, D, dtype, copies):
    dt = DT[dtype]
    g = torch.Generator(device="cuda").manual_seed(B * 7 + D)
    if isinstance(lens, tuple):  # ragged: lengths spread evenly over [lo, hi], shuffled (as attention_sweep.py)
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
    mask = None if len(set(ll)) == 1 else (torch.arange(L, device="cuda")[None, :] < lens_d[:, None])[:, None, None, :]
    return qs, ks, vs, lens_d, mask, ll


def warm(shard: int, n: int) -> None:
    """Compile every distinct kernel the columns launch once: a kernel depends on (tile, group, D, dtype, kind),
    not on the batch or the lengths, so each runs on a problem of one sequence."""
    keys = {}
    for _name, B, Hq, Hk, lens, D, dtype in decode_problems():
        L = lens[1] if isinstance(lens, tuple) else lens
        for _c, tile, s, m, _p, _g in columns_for(B, Hq, Hk, L, D, dtype, fill_of(lens)):
            kind = "single" if s == 1 else m
            keys.setdefault((Hq // Hk, Hk % 16 == 0, D, dtype, tile, kind), None)
    todo = sorted(keys, key=str)[shard::n]
    for group, hk16, D, dtype, (bn, w, st), kind in todo:
        hk = 16 if hk16 else 2
        s = 1 if kind == "single" else 3
        L = 2 * bn * s
        q = torch.randn(1, group * hk, 1, D, device="cuda", dtype=DT[dtype])
        k = torch.randn(1, hk, L, D, device="cuda", dtype=DT[dtype])
        lens = torch.full((1,), L, device="cuda", dtype=torch.int32)
        merge = "inline" if kind == "single" else kind
        dec.decode_attention(q, k, k, lens, max_seq_len=L, tile=(bn, w, st), num_splits=s, merge=merge)
    torch.cuda.synchronize()
    print(f"shard {shard}/{n}: {len(todo)} of {len(keys)} kernels", flush=True)


def problem_row(name, B, Hq, Hk, lens, D, dtype) -> dict:
    """Every column of one problem timed side by side, with its largest difference from SDPA."""
    L = lens[1] if isinstance(lens, tuple) else lens
    copies = copies_for(2 * B * Hk * L * D * 2)
    qs, ks, vs, lens_d, mask, ll = make_inputs(B, Hq, Hk, lens, D, dtype, copies)

    def sdpa(i):
        return F.scaled_dot_product_attention(qs[i % copies], ks[i % copies], vs[i % copies], attn_mask=mask,
                                              enable_gqa=Hk != Hq)  # fmt: skip

    def ours(tile=None, s=None, m=None):
        return lambda i: dec.decode_attention(qs[i % copies], ks[i % copies], vs[i % copies], lens_d, max_seq_len=L,
                                              tile=tile, num_splits=s, merge=m)  # fmt: skip

    cols = {"sdpa": sdpa, "ours": ours()}
    spec = {}
    for c, tile, s, m, programs, gens in columns_for(B, Hq, Hk, L, D, dtype, fill_of(lens)):
        cols[c] = ours(tile, s, m)
        spec[c] = {"tile": list(tile), "splits": s, "merge": m, "programs": programs, "generations": gens}
    calls = max(copies, 10)
    t0 = time.time()
    graphs, errors = {}, {}
    for c, fn in cols.items():
        try:
            graphs[c] = timing.capture(fn, calls)
        except Exception as exc:  # a column that fails is recorded, not fatal
            errors[c] = f"{type(exc).__name__}: {str(exc)[:200]}"
    sides: dict = {f"{c}_graph": g for c, g in graphs.items()}
    sdpa_ms = timing.time_calls({"sdpa": graphs["sdpa"]}, rounds=1, flush=False)["sdpa"].median_ms  # per call
    for c, fn in cols.items():
        if c in graphs and (sdpa_ms < 0.080 or c in ("sdpa", "ours")):
            sides[f"{c}_eager"] = lambda fn=fn: [fn(i) for i in range(calls)]
    res = {}
    for k, t in timing.time_calls(sides, rounds=5, flush=False).items():
        per = calls if k.endswith("_eager") else 1  # a graph side is timed per call, an eager side per run
        res[k] = [t.median_ms / per * 1e3, t.p20_ms / per * 1e3, t.p80_ms / per * 1e3]  # us per call
    graphs.clear()
    # every column against SDPA (one call each, in the cache's dtype)
    ref = sdpa(0).reshape(B, Hq, D).float()
    diffs = {c: float((fn(0)[0].reshape(B, Hq, D).float() - ref).abs().max()) for c, fn in cols.items() if c != "sdpa"}
    plan = dec.advised_plan(B, Hq, Hk, L, D, DT[dtype], dec.gpu_key(qs[0].device))
    return {"shape": name, "problem": {"batch": B, "heads": Hq, "kv_heads": Hk, "seq_len": L, "head_dim": D,
            "dtype": dtype}, "lens_min": min(ll), "total_keys": sum(ll), "calls_per_graph": calls,
            "input_copies": copies, "ours_plan": list(plan) if plan else None, "columns": spec, "us": res,
            "max_abs_diff_vs_sdpa": diffs, "errors": errors, "seconds": time.time() - t0}  # fmt: skip


def run(out_path: str, meta: dict) -> None:
    rows = []
    for problem in decode_problems():
        row = problem_row(*problem)
        row.update({k: meta.get(k) for k in ("gpu", "date", "torch", "triton", "cpu", "command", "commit")})
        rows.append(row)
        res = row["us"]
        best = min((v[0], k) for k, v in res.items() if k.endswith("_graph") and not k.startswith("sdpa"))
        print(json.dumps({"shape": row["shape"], "sdpa": res["sdpa_graph"][0], "ours": res.get("ours_graph", [None])[0],
                          "best": best, "cols": len(res), "s": round(row["seconds"], 1)}), flush=True)  # fmt: skip
        torch.cuda.empty_cache()
        with open(out_path, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--warm", default=None, help="i/n: compile shard i of n and exit")
    p.add_argument("--out", default="decode_variants.json")
    a = p.parse_args()
    if a.warm:
        i, n = (int(x) for x in a.warm.split("/"))
        warm(i, n)
        return
    meta = env_tags("python3 " + " ".join(sys.argv))
    meta["commit"] = os.environ.get("TILEWISE_COMMIT", "unknown")
    meta["timing"] = ("CUDA graphs of calls_per_graph calls over input_copies copies, 5 rounds alternating the "
                      "columns (tilewise.bench.timing, no flush: the copies rotate); eager where SDPA < 80 us; us per call "
                      "[median, p20, p80]")  # fmt: skip
    run(a.out, meta)


if __name__ == "__main__":
    main()
