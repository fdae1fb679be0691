"""Record the CUDA runtime's occupancy answers on the live GPU as a test fixture.

Run on a machine with a GPU and nvcc (the lent H200):

    python tests/data/occupancy/make_fixture.py --out tests/data/occupancy/h200.csv

It writes a CUDA C++ program with many kernels whose register counts (capped with
__maxnreg__), static shared memory and named-barrier counts differ, compiles it for
sm_90, and for each kernel sweeps block size x dynamic shared memory x carveout,
asking `cudaOccupancyMaxActiveBlocksPerMultiprocessor` after
`cudaFuncSetAttribute(MaxDynamicSharedMemorySize)` and
`cudaFuncSetAttribute(PreferredSharedMemoryCarveout)`. Each row records the kernel's
attributes as the runtime reports them (numRegs, sharedSizeBytes) and the answer.
tests/test_occupancy.py asserts that `tilewise.occupancy` agrees on every row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

REG_CAPS = [
    16,
    24,
    32,
    33,
    37,
    40,
    41,
    65,
    97,
    129,
    161,
    193,
    225,
    253,
    48,
    56,
    64,
    72,
    80,
    88,
    96,
    104,
    112,
    120,
    128,
    136,
    144,
    152,
    160,
    168,
    176,
    184,
    192,
    200,
    208,
    216,
    224,
    232,
    240,
    248,
    255,
]
STATIC_SMEM = [1, 100, 1024, 4096, 12345, 30000, 40960, 49152]
STATIC_REG_CAPS = [32, 64, 128, 255]
BARRIER_IDS = [1, 3, 5, 7, 11, 15]  # the kernel uses ids 0..n, i.e. n + 1 barriers
THREADS = [1, 32, 33, 64, 96, 128, 160, 192, 224, 256, 288, 384, 512, 640, 768, 1000, 1024]
DYN = [0, 1, 1000, 4096, 8192, 16384, 32768, 49152, 65536, 81920, 100000, 131072, 163840, 200000, 232448]
CARVEOUTS = [-1, 0, 10, 25, 33, 50, 75, 100]


def kernel_source(name: str, regcap: int, static: int, barrier_id: int) -> str:
    smem = (
        f"__shared__ volatile char s[{static}]; s[threadIdx.x % {static}] = (char)acc[0]; acc[1] += s[(threadIdx.x + 1) % {static}];"
        if static
        else ""
    )
    bar = f'asm volatile("bar.sync {barrier_id}, 32;");' if barrier_id else ""
    return f"""
extern "C" __global__ void __maxnreg__({regcap}) {name}(float* out, const float* in, int n) {{
    float acc[NACC];
#pragma unroll
    for (int i = 0; i < NACC; ++i) acc[i] = in[threadIdx.x + i * 37];
    for (int it = 0; it < n; ++it) {{
#pragma unroll
        for (int i = 0; i < NACC; ++i) acc[i] = acc[i] * acc[(i + 7) % NACC] + acc[(i + 31) % NACC];
    }}
    {smem}
    {bar}
    float t = 0.f;
#pragma unroll
    for (int i = 0; i < NACC; ++i) t += acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = t;
}}
"""


def build_program() -> tuple[str, list[dict]]:
    kernels = []
    for r in REG_CAPS:
        kernels.append(dict(name=f"k_r{r}", regcap=r, static=0, barrier_id=0))
    for s in STATIC_SMEM:
        for r in STATIC_REG_CAPS:
            kernels.append(dict(name=f"k_r{r}_s{s}", regcap=r, static=s, barrier_id=0))
    for b in BARRIER_IDS:
        for r in (32, 128):
            kernels.append(dict(name=f"k_r{r}_b{b}", regcap=r, static=0, barrier_id=b))
    src = ["#include <cstdio>\n#include <cuda_runtime.h>\n#define NACC 240\n"]
    for k in kernels:
        src.append(kernel_source(k["name"], k["regcap"], k["static"], k["barrier_id"]))
    table = ",\n".join(
        f'{{(const void*){k["name"]}, "{k["name"]}", {k["barrier_id"] + 1 if k["barrier_id"] else 1}}}' for k in kernels
    )
    threads = ", ".join(map(str, THREADS))
    dyn = ", ".join(map(str, DYN))
    carve = ", ".join(map(str, CARVEOUTS))
    src.append(f"""
struct K {{ const void* f; const char* name; int barriers; }};
static K kernels[] = {{ {table} }};
int main() {{
    cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
    fprintf(stderr, "device %s sms %d smemPerSM %zu optin %zu reserved %zu\\n", p.name, p.multiProcessorCount,
            p.sharedMemPerMultiprocessor, p.sharedMemPerBlockOptin, p.reservedSharedMemPerBlock);
    int threads[] = {{ {threads} }};
    int dyn[] = {{ {dyn} }};
    int carve[] = {{ {carve} }};
    printf("kernel,barriers,num_regs,static_smem,max_dynamic_smem,threads,dynamic_smem,carveout,blocks,status\\n");
    for (auto& k : kernels) {{
        cudaFuncAttributes a; cudaFuncGetAttributes(&a, k.f);
        int optin_dyn = (int)p.sharedMemPerBlockOptin - (int)a.sharedSizeBytes;
        for (int mode = 0; mode < 2; ++mode) {{
            // mode 0: the limit raised to the opt-in maximum; mode 1: the default 48 KB - static
            int maxdyn = mode == 0 ? optin_dyn : (int)p.sharedMemPerBlock - (int)a.sharedSizeBytes;
            if (cudaFuncSetAttribute(k.f, cudaFuncAttributeMaxDynamicSharedMemorySize, maxdyn) != cudaSuccess) {{
                fprintf(stderr, "set max dyn failed %s %d\\n", k.name, maxdyn); cudaGetLastError(); continue;
            }}
            for (int c : carve) {{
                if (cudaFuncSetAttribute(k.f, cudaFuncAttributePreferredSharedMemoryCarveout, c) != cudaSuccess) {{
                    fprintf(stderr, "set carveout failed %s %d\\n", k.name, c); cudaGetLastError(); continue;
                }}
                for (int t : threads) for (int d : dyn) {{
                    if (d > maxdyn) continue;
                    if (mode == 1 && c != -1 && c != 50) continue;
                    int blocks = -1;
                    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k.f, t, d);
                    if (e != cudaSuccess) cudaGetLastError();
                    printf("%s,%d,%d,%zu,%d,%d,%d,%d,%d,%d\\n", k.name, k.barriers, a.numRegs, a.sharedSizeBytes,
                           maxdyn, t, d, c, blocks, (int)e);
                }}
            }}
        }}
    }}
    return 0;
}}
""")
    return "".join(src), kernels


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/data/occupancy/h200.csv")
    ap.add_argument("--nvcc", default="nvcc")
    args = ap.parse_args()
    src, kernels = build_program()
    with tempfile.TemporaryDirectory() as d:
        cu = os.path.join(d, "occ.cu")
        exe = os.path.join(d, "occ")
        with open(cu, "w") as f:
            f.write(src)
        cmd = [args.nvcc, "-O2", "-gencode=arch=compute_90,code=sm_90", "-o", exe, cu]
        print("compiling", len(kernels), "kernels:", " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True)
        res = subprocess.run([exe], check=True, capture_output=True, text=True)
        sys.stderr.write(res.stderr)
    with open(args.out, "w") as f:
        f.write(res.stdout)
    nrows = res.stdout.count("\n") - 1
    meta = {
        "rows": nrows,
        "command": "python tests/data/occupancy/make_fixture.py --out " + args.out,
        "nvcc": subprocess.run([args.nvcc, "--version"], capture_output=True, text=True)
        .stdout.strip()
        .splitlines()[-1],
        "device_log": res.stderr.strip(),
    }
    with open(os.path.splitext(args.out)[0] + ".meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"wrote {nrows} rows to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
