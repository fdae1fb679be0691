"""The tips document's block_sum, and its warp-shuffle tail.

    tilewise trace examples/sim/block_sum.py --kernel block_sum --grid 8 --block 256
    tilewise trace examples/sim/block_sum.py --kernel block_sum_shfl --grid 8 --block 256
    tilewise trace examples/sim/block_sum.py --kernel block_sum_warp_sync --grid 8 --block 256
    tilewise trace examples/sim/block_sum.py --kernel block_sum_warp_unsynced --grid 8 --block 256

block_sum adds the block's 256 numbers pairwise in shared memory with a barrier after every round; once
stride < 32, `if tid < stride` leaves part of one warp working (divergence). block_sum_shfl stops the
shared-memory tree at 32 values and lets warp 0 finish with __shfl_down_sync: registers, no shared
memory, no __syncthreads().

block_sum_warp_sync keeps the last 32 values in shared memory and lets warp 0 finish them with only
__syncwarp() between rounds: correct since Volta, because __syncwarp orders the warp's shared-memory
accesses. block_sum_warp_unsynced is the pre-Volta "warp-synchronous" version without it: the lanes of a
warp are not guaranteed to run in lock step (independent thread scheduling), so each round reads what
another lane writes with nothing in between, a race the hazard report names.
"""

import numpy as np

from tilewise.sim import (
    FULL_MASK,
    blockDim,
    blockIdx,
    float32,
    kernel,
    shared,
    shfl_down_sync,
    syncthreads,
    syncwarp,
    threadIdx,
)

KERNEL = "block_sum"


@kernel
def block_sum(x, out, n):
    s = shared(256, float32)  # this block's copy, on its SM
    tid = threadIdx.x
    i = blockIdx.x * blockDim.x + tid
    s[tid] = x[i] if i < n else 0.0
    syncthreads()  # waits for this block only
    stride = blockDim.x // 2
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        syncthreads()
        stride >>= 1
    if tid == 0:
        out[blockIdx.x] = s[0]  # one partial sum per block


@kernel
def block_sum_shfl(x, out, n):
    s = shared(256, float32)
    tid = threadIdx.x
    i = blockIdx.x * blockDim.x + tid
    s[tid] = x[i] if i < n else 0.0
    syncthreads()
    stride = blockDim.x // 2
    while stride >= 32:
        if tid < stride:
            s[tid] += s[tid + stride]
        syncthreads()
        stride >>= 1
    if tid < 32:  # warp 0 finishes in registers
        v = s[tid]
        offset = 16
        while offset > 0:
            v += shfl_down_sync(FULL_MASK, v, offset)
            offset >>= 1
        if tid == 0:
            out[blockIdx.x] = v


@kernel
def block_sum_warp_sync(x, out, n):
    s = shared(256, float32)
    tid = threadIdx.x
    i = blockIdx.x * blockDim.x + tid
    s[tid] = x[i] if i < n else 0.0
    syncthreads()
    stride = blockDim.x // 2
    while stride >= 32:
        if tid < stride:
            s[tid] += s[tid + stride]
        syncthreads()
        stride >>= 1
    if tid < 32:  # warp 0 finishes in shared memory, ordered by __syncwarp()
        while stride > 0:
            v = s[tid + stride] if tid < stride else 0.0
            syncwarp()  # every read of this round before any write
            if tid < stride:
                s[tid] += v
            syncwarp()  # every write of this round before the next round's reads
            stride >>= 1
        if tid == 0:
            out[blockIdx.x] = s[0]


@kernel
def block_sum_warp_unsynced(x, out, n):
    s = shared(256, float32)
    tid = threadIdx.x
    i = blockIdx.x * blockDim.x + tid
    s[tid] = x[i] if i < n else 0.0
    syncthreads()
    stride = blockDim.x // 2
    while stride >= 32:
        if tid < stride:
            s[tid] += s[tid + stride]
        syncthreads()
        stride >>= 1
    if tid < 32:  # the old "the warp runs in lock step" idiom: no __syncwarp(), a race since Volta
        while stride > 0:
            if tid < stride:
                s[tid] += s[tid + stride]
            stride >>= 1
        if tid == 0:
            out[blockIdx.x] = s[0]


GRID = (8, 1, 1)
BLOCK = (256, 1, 1)


def setup(grid, block, rng):
    if block[0] != 256 or block[1] * block[2] != 1:
        from tilewise.errors import InputError

        raise InputError(f"block_sum needs --block 256 (its shared array has 256 floats), got {block}")
    n = grid[0] * 256 - 37  # not a multiple of the block: the last block pads with zeros
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(grid[0], np.nan, dtype=np.float32)
    return (x, out, n)


def check(args, blocks=None):
    x, out, n = args
    xs = np.zeros(len(out) * 256)
    xs[:n] = x
    ref = xs.reshape(-1, 256).sum(axis=1)
    sel = [b[0] for b in blocks] if blocks else slice(None)
    return float(np.max(np.abs(out[sel] - ref[sel])))
