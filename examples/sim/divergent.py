"""A data-dependent branch, and the same work as a select.

    tilewise trace examples/sim/divergent.py --kernel divergent --grid 8 --block 256
    tilewise trace examples/sim/divergent.py --kernel divergent_select --grid 8 --block 256

"The warp runs both sides: first the if, with the other threads masked off and idle, then the else.
You pay for both branches." With random signs about half the lanes of every warp take each side, so
each side's lines run at ~50% active lanes. The select rewrite computes both sides in every lane and
picks one: every line at 100% active lanes, and no branch.
"""

import numpy as np

from tilewise.sim import blockDim, blockIdx, kernel, select, threadIdx

KERNEL = "divergent"


@kernel
def divergent(x, y, n):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        v = x[i]
        if v > 0.0:  # data-dependent: lanes of one warp disagree
            r = v * v + 1.0
            r = r * 0.5
        else:
            r = v * 3.0 - 1.0
            r = r * 2.0
        y[i] = r


@kernel
def divergent_select(x, y, n):
    i = blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        v = x[i]
        a = (v * v + 1.0) * 0.5
        b = (v * 3.0 - 1.0) * 2.0
        y[i] = select(v > 0.0, a, b)  # both sides in every lane, then pick


GRID = (8,)
BLOCK = (256,)


def setup(grid, block, rng):
    n = grid[0] * block[0] * block[1] * block[2]
    x = rng.standard_normal(n).astype(np.float32)
    y = np.full(n, np.nan, dtype=np.float32)
    return (x, y, n)


def check(args, blocks=None):
    x, y, _n = args
    xd = x.astype(np.float64)
    ref = np.where(xd > 0, (xd * xd + 1) * 0.5, (xd * 3 - 1) * 2)
    return float(np.nanmax(np.abs(y - ref)))
