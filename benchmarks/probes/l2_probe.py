"""L2 read bandwidth of the GPU, measured: the figure behind the H200 entry's `l2_bw` in `tilewise.gpus`.

One Triton kernel per buffer size reads an fp32 buffer R times over (each program a strided set of 8 KB
blocks, independent loads with `.cg`, so nothing is served from the SM's L1; default caching is a second
column, which at small sizes measures L1). A buffer that fits in L2 is served from L2 after the first
pass: bandwidth = size x R / time (CUDA events around one launch, median of 7). The same kernel over
1 GiB reads from HBM.

    python benchmarks/probes/l2_probe.py --out benchmarks/results/h200/l2_probe.json
"""

import json
import statistics

import torch
import triton
import triton.language as tl
from common import parser, save


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


def rate(nbytes: int, reps: int, programs_per_sm: int, warps: int, cg: bool) -> float:
    block = 2048
    n = nbytes // 4
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
    return n * 4 * reps / statistics.median(times)


def main() -> None:
    args = parser(__doc__, "benchmarks/results/h200/l2_probe.json").parse_args()
    res = {"device": torch.cuda.get_device_name(0), "rows": []}
    for mb in (4, 8, 16, 24, 32, 40, 48, 56, 80, 1024):
        reps = 1 if mb >= 512 else max(4, 4096 // mb)
        for pps, w, cg in ((4, 8, True), (8, 4, True), (4, 8, False)):
            bps = rate(mb * 2**20, reps, pps, w, cg)
            row = {"MiB": mb, "reps": reps, "programs_per_sm": pps, "warps": w, "cg": cg, "TBps": bps / 1e12}
            res["rows"].append(row)
            print(json.dumps(row), flush=True)
    save(args.out, res)


if __name__ == "__main__":
    main()
