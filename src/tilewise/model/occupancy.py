"""Occupancy: how many blocks of a kernel fit on one SM at once, and which limit binds.

Occupancy is decided by four limits, and the tightest one wins: shared memory, registers
(65,536 per SM), warps (64) and blocks (32) on Hopper. The exact
answer is the CUDA runtime's `cudaOccupancyMaxActiveBlocksPerMultiprocessor`, and this
module reproduces it rule for rule (tests/test_occupancy.py checks every row of a
fixture recorded from the runtime on an H200):

* warps: a block takes ceil(threads / 32) warp slots of the SM's 64;
* registers: each warp gets registers x 32 rounded up to a 256-register unit, and the
  register file is split into 4 sub-partitions of 16,384 registers; a block also fails
  outright when its warps, rounded up to a multiple of 4, would not fit in 65,536;
* shared memory: static + dynamic + 1 KB the driver reserves per block, rounded up to
  128 bytes, against the SM's carveout: the preference (a percentage of 228 KB) rounded
  up to a size the SM supports (0, 8, 16, 32, 64, 100, 132, 164, 196, 228 KB), raised
  to fit one block if the preference is too small;
* blocks: 32 per SM;
* barriers: a block that uses n named barriers can share the SM's 2 x 32 with 64 / n blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, positive_int, typed
from tilewise.util import cdiv, json_safe


def _round_up(x: int, unit: int) -> int:
    return cdiv(x, unit) * unit


@dataclass(frozen=True)
class Occupancy:
    """The answer for one configuration. `limits` maps each limit's name to the blocks it allows."""

    gpu: str
    threads: int
    registers: int
    static_smem: int
    dynamic_smem: int
    carveout: int | None
    blocks_per_sm: int
    limiter: str  # the binding limit (the first, if several tie)
    limits: dict[str, int]
    limiters: tuple[str, ...]  # every limit that binds
    warps_per_block: int
    warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float
    registers_per_block: int  # as allocated: per-warp rounding included
    smem_per_block: int  # as allocated: reserved 1 KB and 128-byte rounding included
    smem_per_sm_config: int  # the carveout the SM is configured to for this kernel
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return json_safe(
            {
                "gpu": self.gpu,
                "threads": self.threads,
                "registers": self.registers,
                "static_smem": self.static_smem,
                "dynamic_smem": self.dynamic_smem,
                "carveout": self.carveout,
                "blocks_per_sm": self.blocks_per_sm,
                "limiter": self.limiter,
                "limiters": list(self.limiters),
                "limits": {k: (None if v >= _UNLIMITED else v) for k, v in self.limits.items()},
                "warps_per_block": self.warps_per_block,
                "warps_per_sm": self.warps_per_sm,
                "max_warps_per_sm": self.max_warps_per_sm,
                "occupancy": self.occupancy,
                "registers_per_block": self.registers_per_block,
                "smem_per_block": self.smem_per_block,
                "smem_per_sm_config": self.smem_per_sm_config,
                "notes": list(self.notes),
            }
        )


_UNLIMITED = 2**31 - 1


@typed
def carveout_bytes(gpu: str | _gpus.GPU, carveout: int | None) -> int:
    """The shared-memory size an SM is configured to for a carveout preference.

    `None` is the runtime's default (no preference): the largest carveout. Otherwise
    a percentage of the largest carveout, rounded up to the next size the SM supports.
    """
    gpu = _gpus.get(gpu)
    if carveout is None:
        want = gpu.smem_per_sm
    else:
        want = (positive_int("carveout", carveout, minimum=0, maximum=100) * gpu.smem_per_sm) // 100
    return _align_to_carveout(gpu, want)


def _align_to_carveout(gpu: _gpus.GPU, nbytes: int) -> int:
    for kb in gpu.smem_carveouts_kb:
        if nbytes <= kb * 1024:
            return kb * 1024
    return gpu.smem_carveouts_kb[-1] * 1024


@typed
def registers_per_warp(gpu: str | _gpus.GPU, registers: int) -> int:
    """Registers the SM allocates to one warp: registers x 32, rounded up to 256."""
    gpu = _gpus.get(gpu)
    registers = positive_int("registers", registers, minimum=0, maximum=gpu.max_regs_per_thread)
    return _round_up(registers * gpu.warp_size, gpu.reg_alloc_unit)


@typed
def smem_per_block(gpu: str | _gpus.GPU, static_smem: int, dynamic_smem: int) -> int:
    """Shared memory one block takes: static + dynamic + the reserved 1 KB, rounded to 128 B."""
    gpu = _gpus.get(gpu)
    static_smem = positive_int("static_smem", static_smem, minimum=0)
    dynamic_smem = positive_int("dynamic_smem", dynamic_smem, minimum=0)
    return _round_up(static_smem + dynamic_smem + gpu.reserved_smem_per_block, gpu.smem_alloc_unit)


@typed
def occupancy(
    gpu: str | _gpus.GPU,
    threads: int,
    registers: int,
    static_smem: int = 0,
    dynamic_smem: int = 0,
    carveout: int | None = None,
    max_dynamic_smem: int | None = None,
    barriers: int = 1,
) -> Occupancy:
    """Blocks of one kernel resident per SM, exactly as the CUDA runtime computes it.

    Args:
        gpu: a registry name ('h100-sxm', 'h200', ...) or a `GPU`.
        threads: threads per block (1..1024).
        registers: registers per thread as compiled (0..255).
        static_smem: bytes of `__shared__` arrays (at most 48 KB).
        dynamic_smem: bytes of dynamic shared memory passed at launch.
        carveout: `cudaFuncAttributePreferredSharedMemoryCarveout` as a percentage
            0..100; None is the runtime's default.
        max_dynamic_smem: `cudaFuncAttributeMaxDynamicSharedMemorySize`; by default the
            per-block opt-in limit minus `static_smem`, as after raising it.
        barriers: named barriers the kernel uses (1..16; `__syncthreads` uses one).

    Raises `InputError` for configurations the launch itself would refuse (too many
    threads, registers above the per-thread cap, shared memory beyond the per-block limit).
    """
    g = _gpus.get(gpu)
    threads = positive_int("threads", threads, maximum=g.max_threads_per_block)
    registers = positive_int("registers", registers, minimum=0, maximum=g.max_regs_per_thread)
    static_smem = positive_int("static_smem", static_smem, minimum=0, maximum=g.smem_per_block_default)
    dynamic_smem = positive_int("dynamic_smem", dynamic_smem, minimum=0)
    barriers = positive_int("barriers", barriers, minimum=0, maximum=g.max_barriers_per_block)
    if carveout is not None:
        carveout = positive_int("carveout", carveout, minimum=0, maximum=100)
    optin_dynamic = g.smem_per_block_optin - static_smem
    attribute_set = max_dynamic_smem is not None
    if max_dynamic_smem is None:
        max_dynamic_smem = optin_dynamic
    max_dynamic_smem = positive_int("max_dynamic_smem", max_dynamic_smem, minimum=0, maximum=optin_dynamic)
    if dynamic_smem > max_dynamic_smem:
        # Say where the ceiling comes from: the attribute the caller set, or the GPU's limit less the static part.
        why = (
            f"the max_dynamic_smem attribute, {max_dynamic_smem} bytes"
            if attribute_set
            else f"{max_dynamic_smem} bytes = {g.smem_per_block_optin} per-block limit - {static_smem} static"
        )
        raise InputError(
            f"dynamic_smem must be at most the kernel's max dynamic shared memory ({why}), got {dynamic_smem}"
        )
    notes: list[str] = []

    warps_per_block = cdiv(threads, g.warp_size)
    max_warps = g.max_warps_per_sm

    # Warps.
    by_warps = max_warps // warps_per_block

    # Registers: allocated per warp, in each of the 4 sub-partitions.
    reg_warp = registers_per_warp(g, registers)
    regs_block = reg_warp * warps_per_block
    regs_hw_check = reg_warp * _round_up(warps_per_block, g.sub_partitions)
    if regs_block > g.regs_per_block or regs_hw_check > g.regs_per_block:
        by_regs = 0
        notes.append(
            f"the block needs {regs_hw_check} registers ({reg_warp} per warp x {warps_per_block} warps, "
            f"rounded up to a multiple of {g.sub_partitions} warps), more than the {g.regs_per_block} a block "
            "may have: the launch fails"
        )
    elif reg_warp == 0:
        by_regs = _UNLIMITED
    else:
        warps_per_sub = (g.regs_per_sm // g.sub_partitions) // reg_warp
        by_regs = (warps_per_sub * g.sub_partitions) // warps_per_block

    # Shared memory.
    smem_block = smem_per_block(g, static_smem, dynamic_smem)
    preference = carveout_bytes(g, carveout)
    config = preference if preference >= smem_block else _align_to_carveout(g, smem_block)
    by_smem = config // smem_block if smem_block > 0 else _UNLIMITED
    if preference < smem_block:
        notes.append(
            f"the carveout preference ({preference // 1024} KB) is smaller than one block's "
            f"{smem_block} bytes, so the SM is configured to {config // 1024} KB"
        )

    # Blocks and barriers.
    by_blocks = g.max_blocks_per_sm
    # Barriers: counted by the runtime from Hopper on (cc >= 9.0).
    if g.compute_capability >= (9, 0) and barriers > 0:
        by_barriers = (2 * g.max_blocks_per_sm) // barriers
    else:
        by_barriers = _UNLIMITED

    limits = {
        "warps": by_warps,
        "registers": by_regs,
        "shared_memory": by_smem,
        "blocks": by_blocks,
        "barriers": by_barriers,
    }
    blocks = min(limits.values())
    # The binding limit(s); `limiter` names the first in this order when several tie.
    order = ("registers", "shared_memory", "warps", "blocks", "barriers")
    limiters = tuple(name for name in order if limits[name] == blocks)
    limiter = limiters[0]
    warps_sm = blocks * warps_per_block
    return Occupancy(
        gpu=g.key,
        threads=threads,
        registers=registers,
        static_smem=static_smem,
        dynamic_smem=dynamic_smem,
        carveout=carveout,
        blocks_per_sm=blocks,
        limiter=limiter,
        limits=limits,
        limiters=limiters,
        warps_per_block=warps_per_block,
        warps_per_sm=warps_sm,
        max_warps_per_sm=max_warps,
        occupancy=warps_sm / max_warps,
        registers_per_block=regs_block,
        smem_per_block=smem_block,
        smem_per_sm_config=config,
        notes=notes,
    )


# ------------------------------------------------------------------ what if

BLOCK_SIZES = [32 * i for i in range(1, 33)]
REGISTER_COUNTS = [8 * i for i in range(1, 32)] + [255]


@typed
def what_if(kw: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The occupancy calculator's three graphs: blocks and warps per SM as block size, registers
    and shared memory vary, the rest of `kw` (the arguments of `occupancy`) fixed. A configuration
    the launch would refuse counts as 0 blocks."""
    g = _gpus.get(kw["gpu"])
    out: dict[str, list[dict[str, Any]]] = {"threads": [], "registers": [], "smem": []}
    for t in BLOCK_SIZES:
        o = _try(kw, threads=t)
        out["threads"].append(
            {"threads": t, "blocks": o.blocks_per_sm if o else 0, "warps": o.warps_per_sm if o else 0}
        )
    for r in REGISTER_COUNTS:
        o = _try(kw, registers=r)
        out["registers"].append(
            {"registers": r, "blocks": o.blocks_per_sm if o else 0, "warps": o.warps_per_sm if o else 0}
        )
    step = 4096
    for s in range(0, g.smem_per_block_optin + 1, step):
        o = _try(kw, static_smem=0, dynamic_smem=s, max_dynamic_smem=None)
        out["smem"].append({"smem": s, "blocks": o.blocks_per_sm if o else 0, "warps": o.warps_per_sm if o else 0})
    return out


def _try(kw: dict[str, Any], **change: Any) -> Occupancy | None:
    k = {**kw, **change}
    if k.get("max_dynamic_smem", 0) is None:
        k.pop("max_dynamic_smem")
    try:
        return occupancy(**k)
    except InputError:
        return None
