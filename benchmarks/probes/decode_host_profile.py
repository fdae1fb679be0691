"""Where the host time of one `decode_attention` call goes: per-call host (enqueue) and wall time of a loop of
calls against SDPA's, the host time of each step of ours (input checks, lengths, the split plan, the split
launch, the merge launch), and cProfile's top entries for the B1 Hq64 row (printed).

    python benchmarks/probes/decode_host_profile.py --out benchmarks/results/h200/decode_host_profile.json

The steps are timed by wrapping functions of `tilewise.kernels.decode` in place (`_check`, `_as_lens`,
`choose_splits` and the two kernels' launches), so the probe follows those names if they change.
"""

import cProfile
import io
import json
import pstats
import time

import torch
import torch.nn.functional as F
from common import parser, save

import tilewise.kernels.decode as dec

SHAPES = [
    ("B1 Hq32 Hkv8 L128k", 1, 32, 8, 131072),
    ("B1 Hq64 Hkv8 L64k", 1, 64, 8, 65536),
    ("B1 Hq32 Hkv32 L32k", 1, 32, 32, 32768),
    ("B8 Hq32 Hkv8 L32k", 8, 32, 8, 32768),
]
CALLS = 300


class _TimedLaunch:
    """Stands in for a jitted kernel: `kernel[grid](...)` is timed on the host into `steps[name]`."""

    def __init__(self, kernel, name: str, steps: dict):
        self.kernel, self.name, self.steps = kernel, name, steps

    def __getitem__(self, grid):
        launch = self.kernel[grid]

        def call(*a, **kw):
            t0 = time.perf_counter()
            r = launch(*a, **kw)
            self.steps[self.name] = self.steps.get(self.name, 0) + time.perf_counter() - t0
            return r

        return call


def _timed(name: str, f, steps: dict):
    def g(*a, **kw):
        t0 = time.perf_counter()
        r = f(*a, **kw)
        steps[name] = steps.get(name, 0) + time.perf_counter() - t0
        return r

    return g


def per_call(fn) -> dict:
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(CALLS):
        fn()
    host = (time.perf_counter() - t) / CALLS  # enqueue only: the GPU runs behind
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t) / CALLS
    return {"host_us_per_call": host * 1e6, "wall_us_per_call": wall * 1e6}


def steps_of_ours(q, k, v, lens) -> dict:
    steps: dict = {}
    # (the merge kernel is gone since the last split merges in the same launch: its step reads 0 now)
    saved = {
        n: getattr(dec, n)
        for n in ("_check", "_as_lens", "choose_splits", "_decode_split_kernel", "_decode_merge_kernel")
        if hasattr(dec, n)
    }
    try:
        for n in ("_check", "_as_lens", "choose_splits"):
            setattr(dec, n, _timed(n, saved[n], steps))
        dec._decode_split_kernel = _TimedLaunch(saved["_decode_split_kernel"], "split_launch", steps)
        if "_decode_merge_kernel" in saved:
            dec._decode_merge_kernel = _TimedLaunch(saved["_decode_merge_kernel"], "merge_launch", steps)
        t = time.perf_counter()
        for _ in range(CALLS):
            dec.decode_attention(q, k, v, lens)
        total = time.perf_counter() - t
        torch.cuda.synchronize()
    finally:
        for n, f in saved.items():
            setattr(dec, n, f)
    out = {n: s / CALLS * 1e6 for n, s in steps.items()}
    out["total"] = total / CALLS * 1e6
    return out


def main() -> None:
    args = parser(__doc__, "benchmarks/results/h200/decode_host_profile.json").parse_args()
    res = {}
    for name, b, hq, hk, L in SHAPES:
        q = torch.randn(b, hq, 1, 128, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hk, L, 128, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        lens = torch.full((b,), L, device="cuda", dtype=torch.int32)
        for _ in range(5):  # compile and warm both sides
            dec.decode_attention(q, k, v, lens)
            F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        row = {
            "ours": per_call(lambda q=q, k=k, v=v, lens=lens: dec.decode_attention(q, k, v, lens)),
            "sdpa": per_call(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)),
            "ours_steps_us": steps_of_ours(q, k, v, lens),
        }
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
        save(args.out, res)
        del q, k, v
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
