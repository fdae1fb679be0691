"""End-to-end check of the simulator: the examples' kernels in CUDA, their launch totals under Nsight Compute.

The CUDA twins below are the kernels as the files in examples/sim/ write them, launched with the
same sizes as `tilewise trace` uses by default. Shared arrays are `volatile` so that every source-level
access is one instruction, as the simulator counts them (without it nvcc turns the four sA[ty][k]
of an unrolled k loop into one 16-byte LDS.128; the `gemm_tiled_nv` launch shows that).

    python3 tests/data/ncu/make_examples_fixture.py --out DIR     # on the H200: DIR/ncu_examples.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_fixture import METRICS_CORE, parse_csv  # noqa: E402

METRICS = [*METRICS_CORE, "smsp__sass_inst_executed_op_global_ld.sum", "smsp__sass_inst_executed_op_shared_ld.sum"]

CU = r"""
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define TS 32
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); exit(1);} } while (0)

__global__ void ex_gemm_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ volatile float sA[TS][TS], sB[TS][TS];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TS + ty, col = blockIdx.x * TS + tx;
    float acc = 0.f;
    for (int t = 0; t < K; t += TS) {
        sA[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.f;
        sB[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.f;
        __syncthreads();
        for (int k = 0; k < TS; ++k) acc += sA[ty][k] * sB[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

__global__ void ex_gemm_tiled_nv(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float sA[TS][TS], sB[TS][TS];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TS + ty, col = blockIdx.x * TS + tx;
    float acc = 0.f;
    for (int t = 0; t < K; t += TS) {
        sA[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.f;
        sB[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.f;
        __syncthreads();
        for (int k = 0; k < TS; ++k) acc += sA[ty][k] * sB[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

__global__ void ex_gemm_naive(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.f;
        #pragma unroll 1
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

__global__ void ex_block_sum(const float* x, float* out, int n) {
    __shared__ volatile float s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? x[i] : 0.f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}

#define TILE 32
#define ROWS 8
template <int PAD, bool SWZ>
__global__ void ex_transpose(const float* in, float* out, int W, int H) {
    __shared__ volatile float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        int r = threadIdx.y + j;
        tile[r][SWZ ? (threadIdx.x ^ r) : threadIdx.x] = in[(y + j) * W + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x; y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        int c = threadIdx.y + j;
        out[(y + j) * H + x] = tile[threadIdx.x][SWZ ? (c ^ threadIdx.x) : c];
    }
}

int main() {
    float *A, *B, *C, *x, *o;
    CK(cudaMalloc(&A, 1 << 22)); CK(cudaMalloc(&B, 1 << 22)); CK(cudaMalloc(&C, 1 << 22));
    CK(cudaMalloc(&x, 1 << 22)); CK(cudaMalloc(&o, 1 << 22));
    CK(cudaMemset(A, 0, 1 << 22)); CK(cudaMemset(B, 0, 1 << 22)); CK(cudaMemset(x, 0, 1 << 22));
    int M = 128, N = 128, K = 256;
    ex_gemm_tiled<<<dim3(4, 4), dim3(32, 32)>>>(A, B, C, M, N, K);
    ex_gemm_tiled_nv<<<dim3(4, 4), dim3(32, 32)>>>(A, B, C, M, N, K);
    ex_gemm_naive<<<dim3(4, 4), dim3(32, 32)>>>(A, B, C, M, N, K);
    ex_block_sum<<<8, 256>>>(x, o, 8 * 256 - 37);
    ex_transpose<0, false><<<dim3(4, 4), dim3(32, 8)>>>(x, o, 128, 128);
    ex_transpose<1, false><<<dim3(4, 4), dim3(32, 8)>>>(x, o, 128, 128);
    ex_transpose<0, true><<<dim3(4, 4), dim3(32, 8)>>>(x, o, 128, 128);
    CK(cudaDeviceSynchronize());
    printf("ok\n");
    return 0;
}
"""

NAMES = [
    "gemm_tiled",
    "gemm_tiled_nv",
    "gemm_naive",
    "block_sum",
    "transpose_naive",
    "transpose_padded",
    "transpose_swizzled",
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "tilewise_ncu_ex"))
    ap.add_argument("--build-only", action="store_true")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    cu = os.path.join(a.out, "examples_twins.cu")
    exe = os.path.join(a.out, "examples_twins")
    with open(cu, "w") as f:
        f.write(CU)
    subprocess.run(["nvcc", "-O3", "-gencode=arch=compute_90,code=sm_90", "-o", exe, cu], check=True)
    if a.build_only:
        return 0
    cmd = ["ncu", "--clock-control", "none", "--csv", "--print-units", "base", "--kernel-name", "regex:ex_"]
    cmd += ["--metrics", ",".join(METRICS), exe]
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=45)
    with open(os.path.join(a.out, "ncu_examples.csv"), "w") as f:
        f.write(r.stdout)
    recs = parse_csv(r.stdout)
    if len(recs) != len(NAMES):
        print(r.stdout[-3000:], r.stderr[-3000:])
        return 1
    out = {
        "about": "Nsight Compute launch totals of the examples' kernels in CUDA (make_examples_fixture.py)",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "kernels": {n: {"kernel": rec["kernel"], "metrics": rec["metrics"]} for n, rec in zip(NAMES, recs)},
    }
    with open(os.path.join(a.out, "ncu_examples.json"), "w") as f:
        json.dump(out, f, indent=1)
    for n, rec in out["kernels"].items():
        print(n, {k.split("__")[1][:60]: v for k, v in rec["metrics"].items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
