"""Output-stationary GEMM tiling, one step at a time."""

from __future__ import annotations

from typing import Any

from tilewise.errors import InputError
from tilewise.model import traffic
from tilewise.web.params import Params
from tilewise.web.registry import panel

# The page plays every step it is given.
MAX_TILING_STEPS = 4096


@panel(
    "tiling",
    "Output-stationary tiling, step by step",
    ("m", "n", "k", "block_m", "block_n", "block_k"),
)
def tiling(p: Params) -> dict[str, Any]:
    """Output-stationary tiling: the Triton kernel's loops played one step at a time.

    Program (pid_m, pid_n) walks K in BLOCK_K steps, loading one A tile and one B tile per
    step into registers and accumulating; only after the K loop does it store its C tile.
    The steps are the kernel's loop order; their element counts are checked against
    `model.traffic.gemm_tiled_hbm_bytes` (and compared with the naive kernel's).
    """

    m = p.int("m", 8, 1, 32)
    n = p.int("n", 8, 1, 32)
    k = p.int("k", 8, 1, 32)
    bm = p.int("block_m", 2, 1, 16)
    bn = p.int("block_n", 2, 1, 16)
    bk = p.int("block_k", 2, 1, 16)
    grid_m, grid_n, k_steps = -(-m // bm), -(-n // bn), -(-k // bk)
    if grid_m * grid_n * (k_steps + 1) > MAX_TILING_STEPS:
        raise InputError(f"the animation must have at most {MAX_TILING_STEPS} steps; use larger blocks")
    steps = []
    loaded_a = loaded_b = written_c = 0
    for pid_m in range(grid_m):
        for pid_n in range(grid_n):
            rows = [pid_m * bm, min(m, (pid_m + 1) * bm)]  # offs_m, masked at the edge
            cols = [pid_n * bn, min(n, (pid_n + 1) * bn)]
            for step, k0 in enumerate(range(0, k, bk)):
                ks = [k0, min(k, k0 + bk)]
                loaded_a += (rows[1] - rows[0]) * (ks[1] - ks[0])
                loaded_b += (ks[1] - ks[0]) * (cols[1] - cols[0])
                steps.append(
                    {
                        "op": "mma",
                        "pid": [pid_m, pid_n],
                        "k_step": step,
                        "rows": rows,
                        "cols": cols,
                        "k": ks,
                        "acc_k": ks[1],  # how much of K the accumulator holds after this step
                        "loaded_a": loaded_a,
                        "loaded_b": loaded_b,
                        "written_c": written_c,
                    }
                )
            written_c += (rows[1] - rows[0]) * (cols[1] - cols[0])
            steps.append(
                {
                    "op": "store",
                    "pid": [pid_m, pid_n],
                    "rows": rows,
                    "cols": cols,
                    "acc_k": k,
                    "loaded_a": loaded_a,
                    "loaded_b": loaded_b,
                    "written_c": written_c,
                }
            )
    # Elements, not bytes: the model's byte counts for a 1-byte dtype.
    tiled = traffic.gemm_tiled_hbm_elements(m, n, k, bm, bn)
    naive = traffic.gemm_naive_hbm_elements(m, n, k)
    if tiled != loaded_a + loaded_b + written_c:  # the steps must be the model's traffic
        raise AssertionError(f"tiling steps move {loaded_a + loaded_b + written_c} elements, the model {tiled}")
    return {
        "problem": {"m": m, "n": n, "k": k, "block_m": bm, "block_n": bn, "block_k": bk},
        "grid": [grid_m, grid_n],
        "k_steps": k_steps,
        "steps": steps,
        "totals": {
            "loaded_a": loaded_a,
            "loaded_b": loaded_b,
            "written_c": written_c,
            "tiled_elements": tiled,
            "naive_elements": naive,
            "reduction": naive / tiled,
            "c_writes_if_accumulating_in_memory": m * n * k_steps,
        },
        "flops": traffic.gemm_flops(m, n, k),
    }
