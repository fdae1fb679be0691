"""The tiled GEMM without the zero padding at the edges: out-of-bounds reads when K is not a multiple of 32.

    tilewise trace examples/sim/gemm_tiled_no_padding.py --grid 2,2 --block 32,32

"Pad with zeros at the edges too, or any size that isn't a multiple of TS reads out of bounds."
Here M, N and K are 60, 60 and 100: the last tile reads past the ends of A and B (and of each row).
"""

import numpy as np

from tilewise.errors import InputError
from tilewise.sim import blockIdx, float32, kernel, shared, syncthreads, threadIdx

TS = 32


@kernel
def gemm_no_padding(A, B, C, M, N, K):
    sA = shared((TS, TS), float32)
    sB = shared((TS, TS), float32)
    tx, ty = threadIdx.x, threadIdx.y
    row, col = blockIdx.y * TS + ty, blockIdx.x * TS + tx
    acc = 0.0
    for t in range(0, K, TS):
        sA[ty][tx] = A[row * K + t + tx]  # no bounds check, no zero padding
        sB[ty][tx] = B[(t + ty) * N + col]
        syncthreads()
        for k in range(TS):
            acc += sA[ty][k] * sB[k][tx]
        syncthreads()
    if row < M and col < N:
        C[row * N + col] = acc


GRID = (2, 2)
BLOCK = (32, 32)


def setup(grid, block, rng):
    if tuple(block) != (TS, TS, 1):
        raise InputError(
            f"this kernel needs --block {TS},{TS} (one thread per element of its {TS}x{TS} tile), got {block}"
        )
    M, N, K = grid[1] * TS - 4, grid[0] * TS - 4, 100
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    C = np.full((M, N), np.nan, dtype=np.float32)
    return (A, B, C, M, N, K)
