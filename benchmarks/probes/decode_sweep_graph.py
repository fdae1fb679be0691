"""The decode tile and split-count sweep behind `tilewise.kernels.decode`'s default tile, timed as CUDA-graph
replays (the kernels' own time: an eager call's host time, ~220 us on one device host, hides the kernel on
the batch-1 rows).

For each shape: SDPA's graph time, the default plan's, and every (tile, splits) pair that fits
(at most 8 programs per SM, at least one tile per split), with its max abs error against SDPA.

    python benchmarks/probes/decode_sweep_graph.py --out benchmarks/results/h200/decode_sweep_graph.json
"""

import time

import torch
import torch.nn.functional as F
from common import graph_ms, parser, save

from tilewise.kernels.decode import _DECODE_TILE, choose_splits, decode_attention

SHAPES = [
    ("B1 Hq64 Hkv8 L64k", 1, 64, 8, 65536),
    ("B1 Hq32 Hkv8 L128k", 1, 32, 8, 131072),
    ("B1 Hq32 Hkv32 L32k", 1, 32, 32, 32768),
    ("B8 Hq32 Hkv8 L32k", 8, 32, 8, 32768),
    ("B16 Hq32 Hkv8 L8k", 16, 32, 8, 8192),
    ("B64 Hq32 Hkv8 L4k", 64, 32, 8, 4096),
]
TILES = [
    (64, 4, 3),
    (64, 4, 4),
    (64, 8, 3),
    (128, 4, 3),
    (128, 8, 3),
    (128, 8, 4),
    (32, 4, 4),
]  # (BLOCK_N, warps, stages)
SPLITS = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64]


def run_shape(res: dict, name: str, b: int, hq: int, hk: int, L: int, sms: int) -> None:
    q = torch.randn(b, hq, 1, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, hk, L, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    lens = torch.full((b,), L, device="cuda", dtype=torch.int32)
    ref = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    entry = {
        "sdpa_graph_ms": graph_ms(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), rep=25),
        "default_plan": choose_splits(b, hk, L, sms, _DECODE_TILE[0]),
        "default_graph_ms": graph_ms(lambda: decode_attention(q, k, v, lens), rep=25),
        "configs": [],
    }
    for tile in TILES:
        for s in SPLITS:
            if b * hk * s > 8 * sms or L // s < tile[0]:
                continue
            try:
                o, _ = decode_attention(q, k, v, lens, num_splits=s, tile=tile)
                err = (o.float() - ref.float()).abs().max().item()
                ms = graph_ms(lambda tile=tile, s=s: decode_attention(q, k, v, lens, num_splits=s, tile=tile), rep=25)
                entry["configs"].append({"tile": tile, "splits": s, "ms": ms, "err": err})
            except Exception as e:  # a tile that does not compile or fit: record it and go on
                entry["configs"].append({"tile": tile, "splits": s, "error": repr(e)[:200]})
    timed = [c for c in entry["configs"] if "ms" in c]
    if timed:
        entry["best"] = min(timed, key=lambda c: c["ms"])
    res["shapes"][name] = entry


def main() -> None:
    args = parser(__doc__, "benchmarks/results/h200/decode_sweep_graph.json").parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    res = {"about": __doc__, "tiles": TILES, "splits": SPLITS, "default_tile": _DECODE_TILE, "shapes": {}}
    t0 = time.time()
    for shape in SHAPES:
        run_shape(res, *shape, sms)
        print(f"{shape[0]}: done at {time.time() - t0:.0f} s", flush=True)
        save(args.out, res)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
