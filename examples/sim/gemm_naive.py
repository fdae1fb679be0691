"""The naive GEMM: one thread per C[i][j]; every element of A is read N times, every element of B M times.

    tilewise trace examples/sim/gemm_naive.py --grid 4,4 --block 32,32

Within a warp (one row ty) A[row * K + k] is one address (a broadcast: 1 sector per request) and
B[k * N + col] 32 consecutive floats (4 sectors, coalesced); but nothing is reused from shared memory,
so the bytes requested from global memory are ~K/2 times the distinct bytes.
"""

import numpy as np

from tilewise.sim import blockDim, blockIdx, kernel, threadIdx
from tilewise.sim.lazy import normal, poisoned


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


_BLOCK = list(BLOCK)  # the block shape of the last setup(), for check()


def setup(grid, block, rng):
    """M x N covers the grid, K = 256; inputs above 64 MiB are built lazily (see tilewise.sim.lazy)."""
    _BLOCK[:] = block[:2]
    M, N, K = grid[1] * block[1], grid[0] * block[0], 256
    A = normal((M, K), np.float32, rng)
    B = normal((K, N), np.float32, rng)
    C = poisoned((M, N), np.float32)
    return (A, B, C, M, N, K)


def check(args, blocks=None):
    """Largest error against numpy (float64): over all of C, or the tiles of the blocks that ran."""
    A, B, C, M, N, _ = args
    bw, bh = _BLOCK
    if blocks is None:
        blocks = [(bx, by, 0) for by in range(-(-M // bh)) for bx in range(-(-N // bw))]
    err = 0.0
    for bx, by, _ in blocks:
        rows, cols = slice(by * bh, min(M, by * bh + bh)), slice(bx * bw, min(N, bx * bw + bw))
        ref = A[rows, :].astype(np.float64) @ B[:, cols].astype(np.float64)
        err = max(err, float(np.max(np.abs(C[rows, cols] - ref))))  # NaN (never written) propagates
    return err
