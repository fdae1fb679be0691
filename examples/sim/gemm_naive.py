"""The naive GEMM: one thread per C[i][j]; every element of A is read N times, every element of B M times.

    tilewise trace examples/sim/gemm_naive.py --grid 4,4 --block 32,32

Within a warp (one row ty) A[row * K + k] is one address (a broadcast: 1 sector per request) and
B[k * N + col] 32 consecutive floats (4 sectors, coalesced); but nothing is reused from shared memory,
so the bytes requested from global memory are ~K/2 times the distinct bytes.
"""

import numpy as np

from tilewise.sim import blockDim, blockIdx, kernel, threadIdx


@kernel
def gemm_naive(A, B, C, M, N, K):
    row = blockIdx.y * blockDim.y + threadIdx.y
    col = blockIdx.x * blockDim.x + threadIdx.x
    if row < M and col < N:
        acc = 0.0
        for k in range(K):
            acc += A[row * K + k] * B[k * N + col]
        C[row * N + col] = acc


GRID = (4, 4)
BLOCK = (32, 32)


def setup(grid, block, rng):
    M, N, K = grid[1] * block[1], grid[0] * block[0], 256
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    C = np.full((M, N), np.nan, dtype=np.float32)
    return (A, B, C, M, N, K)


def check(args, blocks=None):
    A, B, C = args[:3]
    ref = A.astype(np.float64) @ B.astype(np.float64)
    if blocks is None:
        return float(np.max(np.abs(C - ref)))
    return float(np.nanmax(np.where(np.isnan(C), 0, np.abs(C - ref))))
