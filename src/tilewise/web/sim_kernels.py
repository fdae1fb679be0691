"""The divergence panel's kernels, written in the simulator's language and run by `tilewise.sim.launch`.

A divergent warp runs both sides: first the if, with the other threads masked off and idle, then
the else, so it pays for both branches. The cures: short branches as cond ? a : b (a select every
thread executes), long ones by sorting or grouping the data so one warp's threads take one path. Each kernel writes which
side each thread took into `side` (1 = if, 2 = else, 3 = both computed, then selected), so the page
draws the simulator's own result; the per-line warp instructions and active lanes come from its trace.
The panel launches each warp on its own (one 32-thread block, `warp` = its index in the pair) so that the
trace's per-line counts are that warp's.
"""

from __future__ import annotations

from tilewise.sim import MemArray, kernel, select, threadIdx


@kernel
def branch_on_data(x: MemArray, y: MemArray, side: MemArray, warp: int) -> None:
    i = threadIdx.x
    v = x[i]
    if v > 0.0:  # lanes may disagree
        r = v * v + 1.0
        r = r * 0.5
        side[i] = 1
    else:
        r = v * 3.0 - 1.0
        r = r * 2.0
        side[i] = 2
    y[i] = r


@kernel
def branch_on_lane(x: MemArray, y: MemArray, side: MemArray, warp: int) -> None:
    i = threadIdx.x
    v = x[i]
    if i % 32 < 16:  # half of each warp
        r = v * v + 1.0
        r = r * 0.5
        side[i] = 1
    else:
        r = v * 3.0 - 1.0
        r = r * 2.0
        side[i] = 2
    y[i] = r


@kernel
def branch_on_warp(x: MemArray, y: MemArray, side: MemArray, warp: int) -> None:
    i = threadIdx.x
    v = x[i]
    if warp == 0:  # whole warps agree
        r = v * v + 1.0
        r = r * 0.5
        side[i] = 1
    else:
        r = v * 3.0 - 1.0
        r = r * 2.0
        side[i] = 2
    y[i] = r


@kernel
def as_select(x: MemArray, y: MemArray, side: MemArray, warp: int) -> None:
    i = threadIdx.x
    v = x[i]
    a = (v * v + 1.0) * 0.5  # both sides
    b = (v * 3.0 - 1.0) * 2.0
    y[i] = select(v > 0.0, a, b)
    side[i] = 3


KERNELS = {
    "data": branch_on_data,
    "sorted": branch_on_data,
    "lane": branch_on_lane,
    "warp": branch_on_warp,
    "select": as_select,
}
