"""Session 2: the H200's L2 read bandwidth, measured (the registry had an order-of-magnitude estimate).

One Triton kernel per size reads an fp32 buffer R times over (each program a strided set of 8 KB blocks,
independent loads, `.cg` so that nothing is served from the SM's L1; the default caching is kept as a
second column, and at small sizes it measures L1), so a buffer that fits in L2 is served from L2 after
the first pass; bandwidth =
size x R / time (CUDA events around one launch, median of 7). The same kernel on 1 GiB gives HBM.
Writes $OUT_AREA/l2_probe.json.
"""

import json
import os
import statistics

import torch
import triton
import triton.language as tl

OUT = os.environ.get("OUT_AREA", "/tmp")


@triton.jit
def _read(x_ptr, out_ptr, n, R: tl.constexpr, BLOCK: tl.constexpr, CG: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    acc = tl.zeros([BLOCK], tl.float32)
    offs = tl.arange(0, BLOCK)
    for _ in range(R):
        for start in range(pid * BLOCK, n, nprog * BLOCK):
            if CG:  # ld.global.cg: cached in L2 only, so a re-read cannot hit the SM's L1
                acc += tl.load(x_ptr + start + offs, cache_modifier=".cg")
            else:
                acc += tl.load(x_ptr + start + offs)
    tl.store(out_ptr + pid * BLOCK + offs, acc)


def rate(nbytes, reps, programs_per_sm, warps, cg):
    n = nbytes // 4
    block = 2048
    n -= n % block
    x = torch.rand(n, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grid = (sms * programs_per_sm,)
    out = torch.empty(grid[0] * block, device="cuda")
    _read[grid](x, out, n, R=reps, BLOCK=block, CG=cg, num_warps=warps)  # compile + first touch
    times = []
    for _ in range(7):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        _read[grid](x, out, n, R=reps, BLOCK=block, CG=cg, num_warps=warps)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    t = statistics.median(times)
    return n * 4 * reps / t


res = {"device": torch.cuda.get_device_name(0), "rows": []}
for mb in (4, 8, 16, 24, 32, 40, 48, 56, 80, 1024):
    reps = 1 if mb >= 512 else max(4, 4096 // mb)
    for pps, w, cg in ((4, 8, True), (8, 4, True), (4, 8, False)):
        bps = rate(mb * 2**20, reps, pps, w, cg)
        row = {"MiB": mb, "reps": reps, "programs_per_sm": pps, "warps": w, "cg": cg, "TBps": bps / 1e12}
        res["rows"].append(row)
        print(json.dumps(row), flush=True)
json.dump(res, open(os.path.join(OUT, "l2_probe.json"), "w"), indent=1)
