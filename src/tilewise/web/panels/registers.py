"""Registers and shared memory: N's upper bound (`model.tensorcore`)."""

from __future__ import annotations

from typing import Any

from tilewise.errors import InputError
from tilewise.model import tensorcore
from tilewise.web.params import Params
from tilewise.web.registry import gpu_summary, hopper_gpu, panel


@panel(
    "registers",
    "Registers and shared memory: N's upper bound",
    ("gpu", "n", "head_dim", "stages", "dtype"),
)
def registers_panel(p: Params) -> dict[str, Any]:
    """`model.tensorcore.attention_tile_budget` for one consumer warpgroup's tile, the register
    total at every N, and `setmaxnreg_split` for 1 producer + 2 consumers."""

    g = hopper_gpu(p)
    n = p.int("n", 128, 16, 256)
    if n % 16:
        raise InputError(f"n must be a multiple of 16 from 16 to 256, got {n}")
    head_dim = p.choice("head_dim", "128", ("64", "96", "128", "192", "256"))
    stages = p.int("stages", 2, 1, 8)
    dtype = p.choice("dtype", "bf16", ("bf16", "fp16"))
    d = int(head_dim)
    budget = tensorcore.attention_tile_budget(d, n, 64, dtype, stages, g.key)
    curve = [tensorcore.register_budget(d, nn, 64, dtype, g.key).to_dict() for nn in range(16, 257, 16)]
    return {
        "gpu": gpu_summary(g),
        "budget": budget,
        "curve": curve,
        "setmaxnreg": tensorcore.setmaxnreg_split(1, 2, 24, g.key),
        "address_registers_modelled": tensorcore.ADDRESS_REGISTERS,
    }
