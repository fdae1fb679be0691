"""Where the host time of one decode_attention call goes (session 2): per-call wall time of a host-bound loop,
the share of each step (checks, plan, allocations, split launch, merge launch), and cProfile's top entries."""

import cProfile
import io
import json
import os
import pstats
import time

import torch
import torch.nn.functional as F

import tilewise.kernels.decode as dec

OUT = os.environ.get("OUT_AREA", "/tmp")
res = {}
shapes = [
    ("B1 Hq32 Hkv8 L128k", 1, 32, 8, 131072),
    ("B1 Hq64 Hkv8 L64k", 1, 64, 8, 65536),
    ("B1 Hq32 Hkv32 L32k", 1, 32, 32, 32768),
    ("B8 Hq32 Hkv8 L32k", 8, 32, 8, 32768),
]
for name, b, hq, hk, L in shapes:
    q = torch.randn(b, hq, 1, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, hk, L, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    lens = torch.full((b,), L, device="cuda", dtype=torch.int32)
    for _ in range(5):
        dec.decode_attention(q, k, v, lens)
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.cuda.synchronize()
    row = {}
    for label, fn in (
        ("ours", lambda q=q, k=k, v=v, lens=lens: dec.decode_attention(q, k, v, lens)),
        ("sdpa", lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)),
    ):
        n = 300
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        host = (time.perf_counter() - t) / n  # host time per call: enqueue only, GPU runs behind
        torch.cuda.synchronize()
        total = (time.perf_counter() - t) / n
        row[label] = {"host_us_per_call": host * 1e6, "wall_us_per_call": total * 1e6}
    # steps of ours, timed on the host
    steps = {}
    orig = {n_: getattr(dec, n_) for n_ in ("_check", "_as_lens", "choose_splits")}

    def wrap(n_, f):
        def g(*a, **kw):
            t0 = time.perf_counter()
            r = f(*a, **kw)
            steps[n_] = steps.get(n_, 0) + time.perf_counter() - t0  # noqa: B023 (called inside this iteration)
            return r

        return g

    for n_, f in orig.items():
        setattr(dec, n_, wrap(n_, f))
    ks, km = dec._decode_split_kernel, dec._decode_merge_kernel

    class W:
        def __init__(s, k, n_):
            s.k, s.n = k, n_

        def __getitem__(s, grid):
            launch = s.k[grid]

            def call(*a, **kw):
                t0 = time.perf_counter()
                r = launch(*a, **kw)
                steps[s.n] = steps.get(s.n, 0) + time.perf_counter() - t0  # noqa: B023
                return r

            return call

    dec._decode_split_kernel, dec._decode_merge_kernel = W(ks, "split_launch"), W(km, "merge_launch")
    n = 300
    t = time.perf_counter()
    for _ in range(n):
        dec.decode_attention(q, k, v, lens)
    tot = time.perf_counter() - t
    torch.cuda.synchronize()
    row["ours_steps_us"] = {k_: v_ / n * 1e6 for k_, v_ in steps.items()}
    row["ours_steps_us"]["total"] = tot / n * 1e6
    for n_, f in orig.items():
        setattr(dec, n_, f)
    dec._decode_split_kernel, dec._decode_merge_kernel = ks, km
    res[name] = row
    print(name, json.dumps(row, indent=1), flush=True)
    if name.startswith("B1 Hq64"):
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(200):
            dec.decode_attention(q, k, v, lens)
        pr.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(35)
        print(s.getvalue()[:9000])
    del q, k, v
    torch.cuda.empty_cache()
json.dump(res, open(os.path.join(OUT, "host_profile.json"), "w"), indent=1)
