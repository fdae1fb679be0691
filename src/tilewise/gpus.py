"""The GPU registry: the hardware facts every other part of tilewise reads.

Each `GPU` holds published or measured figures only, and `GPU.sources` says where
each one comes from. Anything that can be derived (Tensor-Core FLOPs per cycle, peak
FLOP/s at a clock, bandwidth of a memory level, machine balance) is a function here,
never a second constant somewhere else.

    >>> from tilewise import gpus
    >>> h100 = gpus.get("h100")
    >>> gpus.tensor_flops_per_cycle_per_sm(h100, "bf16")
    4096
    >>> round(gpus.peak_flops(h100, "bf16") / 1e12, 1)
    989.4
    >>> round(gpus.balance(h100, "hbm", "bf16"))
    295
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from tilewise.errors import InputError

KB = 1024
MB = 1024 * 1024

# Sources, written once and referred to by name.
_H100_WP = "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022)"
_H100_DS = "NVIDIA H100 datasheet"
_H200_DS = "NVIDIA H200 datasheet"
_A100_WP = "NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020)"
_B200_DS = "NVIDIA Blackwell / HGX B200 datasheet"
_CUDA_GUIDE = "CUDA C++ Programming Guide, compute-capability tables"
_SEED = "boost clock 1830 MHz: 4096 FLOPs/cycle/SM x 132 SMs x 1.83 GHz = 989.4 TFLOPS dense bf16"
_H200_MEASURED = "measured on an H200 with torch.cuda.get_device_properties, 2026-11-30"
_H200_COPY = "measured on an H200: device-to-device copy, bytes read + written, 2026-11-30"
_H200_L2 = (
    "measured on an H200, 2026-11-30: ld.global.cg reads of 8-48 MiB buffers, 12 runs 7.07-8.10 TB/s, median 7.70 "
    "(benchmarks/probes/l2_probe.py, benchmarks/results/h200/l2_probe.json); the same reads of 80 MiB run at "
    "4.57 TB/s (HBM)"
)
_OCC_H = "cuda_occupancy.h and the runtime's answers (tests/data/occupancy_h200.json)"

DTYPE_ALIASES = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "f16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "tf32": "tf32",
    "fp32": "tf32",  # a float32 matmul on Tensor Cores runs as tf32
    "float32": "tf32",
    "fp8": "fp8",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "float8": "fp8",
    "int8": "int8",
}

BYTES_PER_ELEMENT = {"bf16": 2, "fp16": 2, "tf32": 4, "fp8": 1, "int8": 1, "fp32": 4}


def dtype_name(dtype: str) -> str:
    """Normalise a dtype name ('bfloat16' -> 'bf16'); raise with the accepted names otherwise."""
    key = str(dtype).lower().replace("torch.", "")
    if key not in DTYPE_ALIASES:
        raise InputError(f"dtype must be one of {sorted(set(DTYPE_ALIASES))}, got {dtype!r}")
    return DTYPE_ALIASES[key]


def element_bytes(dtype: str) -> int:
    """Bytes of one element of `dtype` as stored in memory (fp32 inputs are 4 bytes)."""
    key = str(dtype).lower().replace("torch.", "")
    if key in ("fp32", "float32", "f32", "float"):
        return 4
    return BYTES_PER_ELEMENT[dtype_name(dtype)]


@dataclass(frozen=True)
class GPU:
    """One GPU model. Sizes in bytes, rates in bytes/s or MHz; see `sources`."""

    key: str
    name: str
    arch: str  # "ampere" | "hopper" | "blackwell"
    compute_capability: tuple[int, int]
    sms: int
    tensor_clock_mhz: float  # the clock at which the datasheet's Tensor-Core peak is quoted
    max_clock_mhz: float
    memory_bytes: int
    hbm_bytes_per_s: float
    l2_bytes: int
    l2_bytes_per_s: float  # NVIDIA publishes none: measured on the H200 (7.7 TB/s), estimates elsewhere
    l1_smem_bytes_per_sm: int  # the unified L1 / shared-memory SRAM of one SM
    smem_per_sm: int  # the largest shared-memory carveout
    smem_per_block_default: int  # static + dynamic without opt-in
    smem_per_block_optin: int  # after cudaFuncSetAttribute(MaxDynamicSharedMemorySize)
    reserved_smem_per_block: int  # the driver's own shared memory per block
    smem_carveouts_kb: tuple[int, ...]  # shared-memory sizes an SM can be configured to
    smem_alloc_unit: int
    smem_bytes_per_cycle_per_sm: int  # 32 banks x 4 bytes
    regs_per_sm: int
    regs_per_block: int
    max_regs_per_thread: int
    reg_alloc_unit: int  # registers are allocated per warp in units of this many
    sub_partitions: int  # SM partitions (schedulers, register-file slices, Tensor Cores)
    warp_size: int
    max_threads_per_block: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    max_barriers_per_block: int  # named hardware barriers a block may use
    tensor_cores_per_sm: int
    dense_macs_per_tc_per_cycle: dict[str, int]  # multiply-adds per Tensor Core per cycle
    fp32_lanes_per_sm: int  # CUDA-core FP32 FMA lanes
    sfu_ops_per_cycle_per_sm: int  # special-function results (exp2, rcp) per cycle
    wgmma: bool  # warpgroup MMA (sm_90a)
    tcgen05: bool  # single-thread MMA with Tensor Memory (sm_100a)
    tma: bool
    aliases: tuple[str, ...] = ()
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    # Convenience views of the derived figures.
    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    def source(self, fieldname: str) -> str:
        return self.sources.get(fieldname, self.sources.get("*", "unspecified"))

    def to_dict(self) -> dict[str, Any]:
        """Every figure, the derived ones included, with its source."""
        d = dataclasses.asdict(self)
        d["compute_capability"] = f"{self.compute_capability[0]}.{self.compute_capability[1]}"
        d["max_warps_per_sm"] = self.max_warps_per_sm
        d["derived"] = {
            "tensor_flops_per_cycle_per_sm": {
                dt: tensor_flops_per_cycle_per_sm(self, dt) for dt in self.dense_macs_per_tc_per_cycle
            },
            "peak_tflops": {dt: peak_flops(self, dt) / 1e12 for dt in self.dense_macs_per_tc_per_cycle},
            "bandwidth_tb_per_s": {lvl: bandwidth(self, lvl) / 1e12 for lvl in LEVELS},
            "balance_flop_per_byte_bf16": {
                lvl: balance(self, lvl, "bf16") for lvl in LEVELS if "bf16" in self.dense_macs_per_tc_per_cycle
            },
        }
        return d


LEVELS = ("hbm", "l2", "smem")


def tensor_flops_per_cycle_per_sm(gpu: GPU, dtype: str = "bf16") -> int:
    """Dense Tensor-Core FLOPs per cycle per SM: 2 x MACs per Tensor Core x Tensor Cores.

    Hopper bf16: 2 x 512 x 4 = 4096 (2048 multiply-adds per SM per cycle).
    """
    dt = dtype_name(dtype)
    if dt not in gpu.dense_macs_per_tc_per_cycle:
        raise InputError(
            f"{gpu.name} has no Tensor-Core rate for {dt}; it has {sorted(gpu.dense_macs_per_tc_per_cycle)}"
        )
    return 2 * gpu.dense_macs_per_tc_per_cycle[dt] * gpu.tensor_cores_per_sm


def peak_flops(gpu: GPU, dtype: str = "bf16", clock_mhz: float | None = None) -> float:
    """Dense Tensor-Core FLOP/s at `clock_mhz` (default: the datasheet's clock).

    H100 SXM bf16: 4096 x 132 x 1.83e9 = 989.4e12.
    """
    clock = gpu.tensor_clock_mhz if clock_mhz is None else float(clock_mhz)
    if clock <= 0:
        raise InputError(f"clock_mhz must be positive, got {clock_mhz!r}")
    return tensor_flops_per_cycle_per_sm(gpu, dtype) * gpu.sms * clock * 1e6


def bandwidth(gpu: GPU, level: str, clock_mhz: float | None = None) -> float:
    """Bytes per second of one memory level: 'hbm', 'l2' or 'smem' (all SMs together).

    Shared memory: 32 banks x 4 bytes = 128 B per cycle per SM, at the SM clock.
    HBM does not follow the SM clock; shared memory does.
    """
    lvl = str(level).lower()
    if lvl == "hbm":
        return gpu.hbm_bytes_per_s
    if lvl == "l2":
        return gpu.l2_bytes_per_s
    if lvl == "smem":
        clock = gpu.tensor_clock_mhz if clock_mhz is None else float(clock_mhz)
        return gpu.smem_bytes_per_cycle_per_sm * gpu.sms * clock * 1e6
    raise InputError(f"level must be one of {[*LEVELS]}, got {level!r}")


def balance(gpu: GPU, level: str = "hbm", dtype: str = "bf16", clock_mhz: float | None = None) -> float:
    """Machine balance: FLOPs the Tensor Cores can do per byte the level delivers.

    H100 SXM, HBM, bf16: 989.4 / 3.35 = 295 FLOP/B.
    """
    return peak_flops(gpu, dtype, clock_mhz) / bandwidth(gpu, level, clock_mhz)


def _sm_limits() -> dict[str, Any]:
    """What every SM from Ampere (cc 8.0) to Blackwell shares: the occupancy-relevant limits,
    the register file and its allocation, shared-memory units, four partitions."""
    return dict(
        smem_per_block_default=48 * KB,
        reserved_smem_per_block=1 * KB,
        smem_alloc_unit=128,
        smem_bytes_per_cycle_per_sm=128,
        regs_per_sm=65536,
        regs_per_block=65536,
        max_regs_per_thread=255,
        reg_alloc_unit=256,
        sub_partitions=4,
        warp_size=32,
        max_threads_per_block=1024,
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        max_barriers_per_block=16,
        tensor_cores_per_sm=4,
        sfu_ops_per_cycle_per_sm=16,
    )


def _hopper_common() -> dict[str, Any]:
    return dict(
        _sm_limits(),
        arch="hopper",
        compute_capability=(9, 0),
        l1_smem_bytes_per_sm=256 * KB,
        smem_per_sm=228 * KB,
        smem_per_block_optin=227 * KB,
        smem_carveouts_kb=(0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
        dense_macs_per_tc_per_cycle={"bf16": 512, "fp16": 512, "tf32": 256, "fp8": 1024, "int8": 1024},
        fp32_lanes_per_sm=128,
        wgmma=True,
        tcgen05=False,
        tma=True,
    )


_HOPPER_SOURCES = {
    "*": _H100_WP,
    "l1_smem_bytes_per_sm": _H100_WP + " (256 KB per SM, shared by L1 and shared memory)",
    "smem_per_sm": _CUDA_GUIDE + " (228 KB)",
    "smem_per_block_optin": _CUDA_GUIDE + " (227 KB)",
    "smem_per_block_default": _CUDA_GUIDE + " (48 KB)",
    "reserved_smem_per_block": _CUDA_GUIDE + " (1 KB reserved per block on cc >= 8.0)",
    "smem_carveouts_kb": _CUDA_GUIDE + "; " + _OCC_H,
    "smem_alloc_unit": _OCC_H,
    "reg_alloc_unit": _OCC_H,
    "sub_partitions": _OCC_H + " (4 partitions, a warp scheduler and a Tensor Core each)",
    "max_barriers_per_block": "PTX ISA: barrier ids 0..15",
    "sfu_ops_per_cycle_per_sm": "CUDA C++ Programming Guide arithmetic-throughput table (16 per SM per cycle); FA3 paper: 3.9 TFLOPS of special functions on an H100 SXM",
    "dense_macs_per_tc_per_cycle": "derived from the whitepaper's dense peaks: 989.4 TFLOPS bf16 / (132 SMs x 4 TCs x 1.83 GHz x 2)",
    "smem_bytes_per_cycle_per_sm": "32 banks x 4 bytes per cycle (CUDA guide, shared-memory banks)",
    "l2_bytes_per_s": "order-of-magnitude estimate; NVIDIA publishes no L2 bandwidth. The H200 (the same GH100 "
    "chip) measured 7.7 TB/s of L2 reads (see its entry); the H100 figures are kept unmeasured",
    "tensor_clock_mhz": _SEED,
}

_REGISTRY: dict[str, GPU] = {}


def _register(gpu: GPU) -> GPU:
    _REGISTRY[gpu.key] = gpu
    return gpu


_register(
    GPU(
        key="h100-sxm",
        name="NVIDIA H100 SXM5 80GB",
        sms=132,
        tensor_clock_mhz=1830,
        max_clock_mhz=1980,
        memory_bytes=80 * 10**9,
        hbm_bytes_per_s=3.35e12,
        l2_bytes=50 * MB,
        l2_bytes_per_s=5.5e12,
        aliases=("h100", "h100sxm", "h100-sxm5", "sm90"),
        sources={**_HOPPER_SOURCES, "hbm_bytes_per_s": _H100_DS, "memory_bytes": _H100_DS, "sms": _H100_WP},
        **_hopper_common(),
    )
)
_register(
    GPU(
        key="h100-pcie",
        name="NVIDIA H100 PCIe 80GB",
        sms=114,
        tensor_clock_mhz=1620,
        max_clock_mhz=1755,
        memory_bytes=80 * 10**9,
        hbm_bytes_per_s=2.0e12,
        l2_bytes=50 * MB,
        l2_bytes_per_s=4.5e12,
        aliases=("h100pcie",),
        sources={
            **_HOPPER_SOURCES,
            "hbm_bytes_per_s": _H100_DS,
            "memory_bytes": _H100_DS,
            "tensor_clock_mhz": "implied by the datasheet's 756 TFLOPS dense bf16 / (4096 x 114)",
        },
        **_hopper_common(),
    )
)
_register(
    GPU(
        key="h200",
        name="NVIDIA H200 SXM 141GB",
        sms=132,
        tensor_clock_mhz=1830,
        max_clock_mhz=1980,
        memory_bytes=141 * 10**9,
        hbm_bytes_per_s=4.8e12,
        l2_bytes=60 * MB,
        l2_bytes_per_s=7.7e12,
        aliases=("h200-sxm", "h200sxm", "gh200"),
        sources={
            **_HOPPER_SOURCES,
            "l2_bytes_per_s": _H200_L2,
            "hbm_bytes_per_s": _H200_DS + " (4.8 TB/s; a copy reaches 4.28 TB/s: " + _H200_COPY + ")",
            "memory_bytes": _H200_DS,
            "sms": _H200_MEASURED,
            "l2_bytes": _H200_MEASURED + " (62914560 bytes)",
            "smem_per_sm": _H200_MEASURED + " (233472 bytes)",
            "smem_per_block_optin": _H200_MEASURED + " (232448 bytes)",
            "regs_per_sm": _H200_MEASURED,
            "tensor_clock_mhz": _H200_DS + ": the H100's compute at the same clock",
        },
        **_hopper_common(),
    )
)
_register(
    GPU(
        key="a100-sxm",
        name="NVIDIA A100 SXM4 80GB",
        arch="ampere",
        compute_capability=(8, 0),
        sms=108,
        tensor_clock_mhz=1410,
        max_clock_mhz=1410,
        memory_bytes=80 * 10**9,
        hbm_bytes_per_s=2.039e12,
        l2_bytes=40 * MB,
        l2_bytes_per_s=4.0e12,
        l1_smem_bytes_per_sm=192 * KB,
        smem_per_sm=164 * KB,
        smem_per_block_optin=163 * KB,
        smem_carveouts_kb=(0, 8, 16, 32, 64, 100, 132, 164),
        **_sm_limits(),
        dense_macs_per_tc_per_cycle={"bf16": 256, "fp16": 256, "tf32": 128, "int8": 512},
        fp32_lanes_per_sm=64,
        wgmma=False,
        tcgen05=False,
        tma=False,
        aliases=("a100", "a100-80gb", "a100sxm", "sm80"),
        sources={
            "*": _A100_WP,
            "smem_carveouts_kb": _CUDA_GUIDE + "; " + _OCC_H,
            "dense_macs_per_tc_per_cycle": "derived from 312 TFLOPS dense bf16 / (108 x 4 x 1.41 GHz x 2)",
            "l2_bytes_per_s": "order-of-magnitude estimate; NVIDIA publishes no L2 bandwidth",
        },
    )
)
_register(
    GPU(
        key="b200",
        name="NVIDIA B200 (HGX, 1000 W)",
        sms=148,
        tensor_clock_mhz=1855,
        max_clock_mhz=1965,
        memory_bytes=180 * 10**9,
        hbm_bytes_per_s=8.0e12,
        l2_bytes=126 * MB,
        l2_bytes_per_s=10e12,
        # The SM's memory and scheduling limits are Hopper's; the Tensor Cores and MMA path are not.
        **{
            **_hopper_common(),
            "arch": "blackwell",
            "compute_capability": (10, 0),
            "dense_macs_per_tc_per_cycle": {"bf16": 1024, "fp16": 1024, "tf32": 512, "fp8": 2048, "int8": 2048},
            "wgmma": False,
            "tcgen05": True,
        },
        aliases=("b200-sxm", "sm100", "blackwell"),
        sources={
            "*": _B200_DS + " (less certain than the Hopper entries: check against detect())",
            "tensor_clock_mhz": "implied by the datasheet's 2.25 PFLOPS dense bf16 / (8192 x 148)",
            "l2_bytes_per_s": "order-of-magnitude estimate; NVIDIA publishes no L2 bandwidth",
            "smem_carveouts_kb": _CUDA_GUIDE,
        },
    )
)


def _lookup_key(name: str) -> str | None:
    k = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    if k in _REGISTRY:
        return k
    for gpu in _REGISTRY.values():
        if k in gpu.aliases or k.replace("-", "") in (a.replace("-", "") for a in gpu.aliases):
            return gpu.key
    return None


def get(name: str | GPU) -> GPU:
    """The registry entry for `name` (a key such as 'h100-sxm' or an alias such as 'h100')."""
    if isinstance(name, GPU):
        return name
    key = _lookup_key(name)
    if key is None:
        known = ", ".join(sorted(_REGISTRY))
        raise InputError(f"unknown GPU {name!r}; expected one of: {known} (or an alias such as 'h100', 'a100')")
    return _REGISTRY[key]


def list() -> builtins.list[GPU]:
    """All registry entries, in registration order."""
    return [*_REGISTRY.values()]


def names() -> builtins.list[str]:
    return [*_REGISTRY]


class NoDeviceError(InputError):
    """Raised by `detect()` when there is no CUDA device to read."""


def detect(device: int = 0) -> GPU:
    """Build a `GPU` from the live device through torch (and CuPy where present for clocks).

    Figures read from the device replace the registry's and are sourced as detected;
    what the device cannot tell (Tensor-Core rates, HBM bandwidth) comes from the
    registry entry of the same model. Raises `NoDeviceError` when there is none.
    """
    try:
        import torch
    except ImportError:
        raise NoDeviceError(
            "--detect needs a CUDA device through torch, got no torch (pip install 'tilewise[kernels]')"
        ) from None
    if not torch.cuda.is_available():
        raise NoDeviceError(
            "--detect needs a CUDA device, got none: torch.cuda.is_available() is False on this machine"
        )
    p = torch.cuda.get_device_properties(device)
    base_key = key_for_device(p.name, p.multi_processor_count)
    base = _REGISTRY[base_key]
    today = _dt.date.today().isoformat()
    src = f"detected from the device ({p.name}) on {today}"
    upd: dict[str, Any] = {
        "key": base_key + "-detected",
        "name": p.name,
        "compute_capability": (p.major, p.minor),
        "sms": p.multi_processor_count,
        "memory_bytes": int(p.total_memory),
        "aliases": (),
    }
    for attr, fieldname in (
        ("L2_cache_size", "l2_bytes"),
        ("shared_memory_per_multiprocessor", "smem_per_sm"),
        ("shared_memory_per_block", "smem_per_block_default"),
        ("shared_memory_per_block_optin", "smem_per_block_optin"),
        ("regs_per_multiprocessor", "regs_per_sm"),
        ("max_threads_per_multi_processor", "max_threads_per_sm"),
        ("warp_size", "warp_size"),
    ):
        v = getattr(p, attr, None)
        if v:
            upd[fieldname] = int(v)
    try:  # clocks and the reserved shared memory are not exposed by torch
        import cupy

        cp = cupy.cuda.runtime.getDeviceProperties(device)
        upd["max_clock_mhz"] = cp["clockRate"] / 1000
        if "reservedSharedMemPerBlock" in cp:
            upd["reserved_smem_per_block"] = int(cp["reservedSharedMemPerBlock"])
        if "maxBlocksPerMultiProcessor" in cp:
            upd["max_blocks_per_sm"] = int(cp["maxBlocksPerMultiProcessor"])
        if "regsPerBlock" in cp:
            upd["regs_per_block"] = int(cp["regsPerBlock"])
    except Exception:
        pass
    sources = dict(base.sources)
    for k in upd:
        if k not in ("key", "aliases"):
            sources[k] = src
    return dataclasses.replace(base, **upd, sources=sources)


def key_for_device(device_name: str, sms: int | None = None) -> str:
    """The registry entry for a device name as CUDA reports it ('NVIDIA H200' -> 'h200').

    An unknown model maps to the entry closest in SM count when `sms` is given, else to h100-sxm.
    """
    n = device_name.lower()
    if "h200" in n:
        return "h200"
    if "h100" in n:
        return "h100-pcie" if ("pcie" in n or sms == 114) else "h100-sxm"
    if "a100" in n:
        return "a100-sxm"
    if "b200" in n:
        return "b200"
    if sms is None:
        return "h100-sxm"
    # Unknown model: take the closest by SM count; detect() says so in sources.
    return min(_REGISTRY, key=lambda k: abs(_REGISTRY[k].sms - sms))
