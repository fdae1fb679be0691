"""tilewise.sim: CUDA-style kernels in Python, run warp by warp, with Nsight Compute's access counts.

    from tilewise.sim import *

    @kernel
    def copy(x, y, n):
        i = blockIdx.x * blockDim.x + threadIdx.x
        if i < n:
            y[i] = x[i]

    t = launch(copy, grid=4, block=256, x, y, len(x))
    print(render_text(t))

- `analyze_access(addresses, width, space, active=None, store=False, atomic=False)`: one warp instruction's
  sectors and requests (global) or wavefronts and bank conflicts (shared), as Nsight Compute counts them on
  an H200; atomic=True / "cas" / "loop" for atomics (same-address lanes serialize; see access.py).
- `shared_passes(addresses, width, active=None, store=False)`: the same shared-memory rule, pass by pass
  (which lanes go together, and why: 8/16-byte loads pair phases when lanes pair by i^1 or i^2).
- `kernel`, `device`, `launch`: the kernel language (lang.py) and the executor (runtime.py).
- `report(trace)` / `render_text` / `render_json`: the per-line report of `tilewise trace`.
"""

from tilewise.sim.access import analyze_access, analyze_batch, shared_passes
from tilewise.sim.builtins import (
    FULL_MASK,
    all_sync,
    any_sync,
    as_int,
    atomic_add,
    atomic_exch,
    atomic_max,
    atomic_min,
    ballot_sync,
    blockDim,
    blockIdx,
    dynamic_shared,
    expf,
    float16,
    float32,
    float64,
    fmaxf,
    fminf,
    gridDim,
    imax,
    imin,
    int8,
    int16,
    int32,
    int64,
    lane_id,
    select,
    shared,
    shfl_down_sync,
    shfl_sync,
    shfl_up_sync,
    shfl_xor_sync,
    sqrtf,
    syncthreads,
    syncwarp,
    threadIdx,
    uint8,
    uint16,
    uint32,
    warp_id,
)
from tilewise.sim.memory import MemArray, Vec, make_vec, vec
from tilewise.sim.runtime import Device, Kernel, Trace, device, kernel, launch

__all__ = [
    "FULL_MASK",
    "Device",
    "Kernel",
    "MemArray",
    "Trace",
    "Vec",
    "all_sync",
    "analyze_access",
    "analyze_batch",
    "any_sync",
    "as_int",
    "atomic_add",
    "atomic_exch",
    "atomic_max",
    "atomic_min",
    "ballot_sync",
    "blockDim",
    "blockIdx",
    "device",
    "dynamic_shared",
    "expf",
    "float16",
    "float32",
    "float64",
    "fmaxf",
    "fminf",
    "gridDim",
    "imax",
    "imin",
    "int8",
    "int16",
    "int32",
    "int64",
    "kernel",
    "lane_id",
    "launch",
    "make_vec",
    "select",
    "shared",
    "shared_passes",
    "shfl_down_sync",
    "shfl_sync",
    "shfl_up_sync",
    "shfl_xor_sync",
    "sqrtf",
    "syncthreads",
    "syncwarp",
    "threadIdx",
    "uint8",
    "uint16",
    "uint32",
    "vec",
    "warp_id",
]
