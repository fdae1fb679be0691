"""The tiled GEMM with its second __syncthreads() left out: a hazard the simulator reports.

    tilewise trace examples/sim/gemm_tiled_no_second_barrier.py --grid 4,4 --block 32,32

"Without the second, the next iteration overwrites data other threads are still reading": the store
sA[ty][tx] of tile t+1 races the loads sA[ty][k] of tile t (write-after-read, no barrier between).
The simulator runs the block in lock step, so the numbers still come out right here; on a GPU they need not.

The seed's own check: "tx is contiguous within a warp, so the loads from A and B hit consecutive
addresses: coalesced. In the inner loop, sA[ty][k] is the same address for the whole warp, a broadcast,
and sB[k][tx] spans 32 different banks. No conflicts."
"""

import numpy as np

from tilewise.errors import InputError
from tilewise.sim import blockIdx, float32, kernel, shared, syncthreads, threadIdx
from tilewise.sim.lazy import normal, poisoned

TS = 32


@kernel
def gemm(A, B, C, M, N, K):
    sA = shared((TS, TS), float32)
    sB = shared((TS, TS), float32)
    tx, ty = threadIdx.x, threadIdx.y
    row, col = blockIdx.y * TS + ty, blockIdx.x * TS + tx
    acc = 0.0
    for t in range(0, K, TS):
        sA[ty][tx] = A[row * K + t + tx] if (row < M and t + tx < K) else 0.0
        sB[ty][tx] = B[(t + ty) * N + col] if (t + ty < K and col < N) else 0.0
        syncthreads()  # the whole tile is loaded
        for k in range(TS):
            acc += sA[ty][k] * sB[k][tx]
        # the second syncthreads() is missing
    if row < M and col < N:
        C[row * N + col] = acc


GRID = (4, 4)
BLOCK = (32, 32)


def setup(grid, block, rng):
    """Arguments for a launch of `grid` blocks: M x N covers the grid, K = 256.

    One thread per element of the TS x TS tile, so the block must be TS x TS. Inputs larger than
    64 MiB are built lazily (only the pages the simulated blocks touch exist: --sample stays cheap).
    """
    if tuple(block) != (TS, TS, 1):
        raise InputError(
            f"this kernel needs --block {TS},{TS} (one thread per element of its {TS}x{TS} tile), got {block}"
        )
    M, N, K = grid[1] * TS, grid[0] * TS, 256
    A = normal((M, K), np.float32, rng)
    B = normal((K, N), np.float32, rng)
    C = poisoned((M, N), np.float32)
    return (A, B, C, M, N, K)


def check(args, blocks=None):
    """Largest error against numpy (float64): over every block, or the tiles of the blocks that ran."""
    A, B, C, M, N, _ = args
    if blocks is None:
        blocks = [(bx, by, 0) for by in range(-(-M // TS)) for bx in range(-(-N // TS))]
    err = 0.0
    for bx, by, _ in blocks:
        rows, cols = slice(by * TS, min(M, by * TS + TS)), slice(bx * TS, min(N, bx * TS + TS))
        ref = A[rows, :].astype(np.float64) @ B[:, cols].astype(np.float64)
        err = max(err, float(np.max(np.abs(C[rows, cols] - ref))))  # NaN (never written) propagates
    return err
