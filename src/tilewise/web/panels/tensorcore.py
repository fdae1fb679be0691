"""Feeding the Tensor Cores: SS and RS operands at every N (`model.tensorcore`)."""

from __future__ import annotations

from typing import Any

from tilewise.model import tensorcore
from tilewise.web.params import Params
from tilewise.web.registry import gpu_summary, hopper_gpu, panel


@panel(
    "tensorcore",
    "Feeding the Tensor Cores: drag N",
    ("gpu", "n", "dtype"),
)
def tensorcore_panel(p: Params) -> dict[str, Any]:
    """`model.tensorcore.smem_feed` (SS and RS) at one N, and `feed_table` over every legal N."""

    g = hopper_gpu(p)
    n = p.int("n", 64, tensorcore.WGMMA_N_MIN, tensorcore.WGMMA_N_MAX)
    dtype = p.choice("dtype", "bf16", ("bf16", "fp16", "fp8"))
    tensorcore.check_n(n)
    ns = list(range(tensorcore.WGMMA_N_MIN, tensorcore.WGMMA_N_MAX + 1, tensorcore.WGMMA_N_STEP))
    return {
        "gpu": gpu_summary(g),
        "n": n,
        "dtype": dtype,
        "wgmma": tensorcore.wgmma(n, dtype, g.key).to_dict(),
        "ss": tensorcore.smem_feed(n, dtype, "SS", g.key).to_dict(),
        "rs": tensorcore.smem_feed(n, dtype, "RS", g.key).to_dict(),
        "sm": tensorcore.sm_flops_per_cycle(g.key, dtype),
        "table": {
            "ss": [f.to_dict() for f in tensorcore.feed_table(ns, dtype, "SS", g.key)],
            "rs": [f.to_dict() for f in tensorcore.feed_table(ns, dtype, "RS", g.key)],
        },
        "modelled": tensorcore.MODELLED,
    }
