"""Session 2: the decode tile/split sweep again, timed as CUDA-graph replays (GPU time only).

Session 1's sweep was timed eagerly, and on the B1 rows a call's ~220 us of host time (two Triton launches
and the wrapper) hid the kernel: every configuration landed at 142-194 us. Here each configuration is one
captured graph, replayed after do_bench's L2 flush, so the figures are the kernel's own.
Writes $OUT_AREA/decode_sweep_graph.json: per shape, SDPA's graph time and every (splits, tile) time.
"""

import json
import os
import time

import torch
import torch.nn.functional as F
from triton.testing import do_bench

from tilewise.kernels.decode import _DECODE_TILE, choose_splits, decode_attention

OUT = os.environ.get("OUT_AREA", "/tmp")
BUDGET = float(os.environ.get("SWEEP_BUDGET", "240"))
t_start = time.time()


def graph_ms(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    ms = do_bench(g.replay, warmup=5, rep=25, return_mode="median")
    del g
    return ms


SHAPES = [
    ("B1 Hq64 Hkv8 L64k", 1, 64, 8, 65536),
    ("B1 Hq32 Hkv8 L128k", 1, 32, 8, 131072),
    ("B1 Hq32 Hkv32 L32k", 1, 32, 32, 32768),
    ("B8 Hq32 Hkv8 L32k", 8, 32, 8, 32768),
    ("B16 Hq32 Hkv8 L8k", 16, 32, 8, 8192),
    ("B64 Hq32 Hkv8 L4k", 64, 32, 8, 4096),
]
TILES = [(64, 4, 3), (64, 4, 4), (64, 8, 3), (128, 4, 3), (128, 8, 3), (128, 8, 4), (32, 4, 4)]
SPLITS = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64]
res = {"about": __doc__, "tiles": TILES, "splits": SPLITS, "default_tile": _DECODE_TILE, "shapes": {}}
sms = torch.cuda.get_device_properties(0).multi_processor_count


def run_shape(name, b, hq, hk, L):
    q = torch.randn(b, hq, 1, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, hk, L, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    lens = torch.full((b,), L, device="cuda", dtype=torch.int32)
    ref = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    entry = {
        "sdpa_graph_ms": graph_ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)),
        "default_plan": choose_splits(b, hk, L, sms, _DECODE_TILE[0]),
        "default_graph_ms": graph_ms(lambda: decode_attention(q, k, v, lens)),
        "configs": [],
    }
    todo = [(t, s) for t in TILES for s in SPLITS if b * hk * s <= 8 * sms and L // s >= t[0]]
    for tile, s in todo:
        if time.time() - t_start > BUDGET:
            break
        try:
            o, _ = decode_attention(q, k, v, lens, num_splits=s, tile=tile)
            err = (o.float() - ref.float()).abs().max().item()
            ms = graph_ms(lambda tile=tile, s=s: decode_attention(q, k, v, lens, num_splits=s, tile=tile))
            entry["configs"].append({"tile": tile, "splits": s, "ms": ms, "err": err})
        except Exception as e:  # a tile that does not compile or fit: record and go on
            entry["configs"].append({"tile": tile, "splits": s, "error": repr(e)[:200]})
    if not any("ms" in c for c in entry["configs"]):
        return
    best = min((c for c in entry["configs"] if "ms" in c), key=lambda c: c["ms"])
    entry["best"] = best
    res["shapes"][name] = entry
    print(
        f"{name}: sdpa {entry['sdpa_graph_ms'] * 1e3:.1f} us, default {entry['default_plan']} "
        f"{entry['default_graph_ms'] * 1e3:.1f} us, best {best['tile']} x{best['splits']} {best['ms'] * 1e3:.1f} us "
        f"(err {best['err']:.2e}), {time.time() - t_start:.0f}s",
        flush=True,
    )
    json.dump(res, open(os.path.join(OUT, "decode_sweep_graph.json"), "w"), indent=1)


for shape in SHAPES:
    run_shape(*shape)
    torch.cuda.empty_cache()
