"""Matrix transpose through a shared 32x32 tile: naive, padded and swizzled.

    tilewise trace examples/sim/transpose.py --kernel transpose_naive --grid 4,4 --block 32,8
    tilewise trace examples/sim/transpose.py --kernel transpose_padded
    tilewise trace examples/sim/transpose.py --kernel transpose_swizzled

All three read rows of `inp` and write rows of `out` (coalesced both ways); the tile is written along
a row and read along a column. Naive: the column read tile[tx][ty + j] puts the warp's 32 lanes 32 words
apart, all in one bank (32-way conflict). Padded: a 33-float row shifts each row by one bank. Swizzled:
column c of row r is stored at c ^ r, which spreads a column over the 32 banks with no wasted memory.
"""

import numpy as np

from tilewise.sim import blockIdx, float32, kernel, shared, syncthreads, threadIdx

TILE = 32
ROWS = 8  # the block is 32 x 8: each thread moves 4 elements
KERNEL = "transpose_naive"


@kernel
def transpose_naive(inp, out, W, H):
    tile = shared((TILE, TILE), float32)
    x = blockIdx.x * TILE + threadIdx.x
    y = blockIdx.y * TILE + threadIdx.y
    for j in range(0, TILE, ROWS):
        tile[threadIdx.y + j][threadIdx.x] = inp[(y + j) * W + x]
    syncthreads()
    x = blockIdx.y * TILE + threadIdx.x
    y = blockIdx.x * TILE + threadIdx.y
    for j in range(0, TILE, ROWS):
        out[(y + j) * H + x] = tile[threadIdx.x][threadIdx.y + j]


@kernel
def transpose_padded(inp, out, W, H):
    tile = shared((TILE, TILE + 1), float32)  # one spare column: row r starts in bank r % 32
    x = blockIdx.x * TILE + threadIdx.x
    y = blockIdx.y * TILE + threadIdx.y
    for j in range(0, TILE, ROWS):
        tile[threadIdx.y + j][threadIdx.x] = inp[(y + j) * W + x]
    syncthreads()
    x = blockIdx.y * TILE + threadIdx.x
    y = blockIdx.x * TILE + threadIdx.y
    for j in range(0, TILE, ROWS):
        out[(y + j) * H + x] = tile[threadIdx.x][threadIdx.y + j]


@kernel
def transpose_swizzled(inp, out, W, H):
    tile = shared((TILE, TILE), float32)  # element (r, c) lives at tile[r][c ^ r]
    x = blockIdx.x * TILE + threadIdx.x
    y = blockIdx.y * TILE + threadIdx.y
    for j in range(0, TILE, ROWS):
        r = threadIdx.y + j
        tile[r][threadIdx.x ^ r] = inp[(y + j) * W + x]
    syncthreads()
    x = blockIdx.y * TILE + threadIdx.x
    y = blockIdx.x * TILE + threadIdx.y
    for j in range(0, TILE, ROWS):
        c = threadIdx.y + j
        out[(y + j) * H + x] = tile[threadIdx.x][c ^ threadIdx.x]


GRID = (4, 4)
BLOCK = (32, 8)


def setup(grid, block, rng):
    if block[:2] != (TILE, ROWS):
        from tilewise.errors import InputError

        raise InputError(f"transpose needs --block {TILE},{ROWS}, got {block}")
    H, W = grid[1] * TILE, grid[0] * TILE
    inp = rng.standard_normal((H, W)).astype(np.float32)
    out = np.full((W, H), np.nan, dtype=np.float32)
    return (inp, out, W, H)


def check(args, blocks=None):
    inp, out = args[:2]
    if blocks is None:
        return float(np.max(np.abs(out - inp.T)))
    return float(np.nanmax(np.where(np.isnan(out), 0, np.abs(out - inp.T))))
