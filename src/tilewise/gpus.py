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
import json
import os
from dataclasses import dataclass, field
from typing import Any

try:  # TOML GPU files (`load`): tomllib from Python 3.11, the `tomli` dependency on 3.10
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    try:
        import tomli as _toml  # type: ignore[no-redef]
    except ModuleNotFoundError:
        _toml = None  # type: ignore[assignment]

from tilewise.errors import InputError, clip, number, one_of, whole
from tilewise.errors import shown as _shown

# A GPU file's path is echoed whole up to this length: a pytest or CI temp path is 80-120 characters, and a
# path cut in the middle names no file.
PATH_CHARS = 600

KB = 1024
MB = 1024 * 1024

# Sources, written once and referred to by name.
# How a figure's source begins says what kind of figure it is (explain's reports sort them by it): measured on a
# device, or an order-of-magnitude estimate; every other source is a datasheet or a derivation from one.
MEASURED_PREFIXES = ("measured on", "detected from the device")
ESTIMATE_PREFIX = "order-of-magnitude estimate"
_L2_UNPUBLISHED = ESTIMATE_PREFIX + "; NVIDIA publishes no L2 bandwidth"
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
_H100_PAGE = "NVIDIA H100 datasheet, https://www.nvidia.com/en-us/data-center/h100/ (H100 NVL column)"
_GH200_DS = (
    "NVIDIA GH200 Grace Hopper Superchip datasheet, https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/"
)
_H20_BRIEF = (
    "NVIDIA H20 product brief (2024) as reported, e.g. https://www.techpowerup.com/gpu-specs/h20.c4225 "
    "(NVIDIA publishes no H20 page: less certain than the other Hopper entries, check against detect())"
)
_L40S_DS = "NVIDIA L40S datasheet, https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"
_ADA_WP = (
    "NVIDIA Ada Lovelace GPU architecture whitepaper v2.1, appendix A, "
    "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
)
_CC89 = (
    _CUDA_GUIDE + " (compute capability 8.9: 100 KB shared per SM, 99 KB per block, 1536 threads and 24 blocks per SM)"
)

# The one dtype table: every spelling tilewise accepts -> its storage name. The explain reports, the
# advisor, the composed-layer model and the kernels' configs all read it (through `dtype_key`).
DTYPE_ALIASES = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "f16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "tf32": "tf32",
    "fp32": "fp32",
    "f32": "fp32",
    "float32": "fp32",
    "float": "fp32",
    "fp8": "fp8",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "float8": "fp8",
    "int8": "int8",
}

# A float32 matmul on Tensor Cores runs as tf32 (10-bit mantissa inputs, fp32 accumulate): the Tensor-Core
# rate of an fp32 GEMM is the tf32 one, and the reports say so.
TENSOR_CORE_DTYPE = {"fp32": "tf32"}

BYTES_PER_ELEMENT = {"bf16": 2, "fp16": 2, "tf32": 4, "fp8": 1, "int8": 1, "fp32": 4}


def dtype_key(dtype: object, allowed: tuple[str, ...] | None = None) -> str:
    """The storage name of `dtype` ('bfloat16' -> 'bf16', 'half' -> 'fp16', 'float32' -> 'fp32'), one of
    `allowed` when given; InputError naming the accepted names otherwise."""
    key = dtype.strip().lower().replace("torch.", "") if isinstance(dtype, str) else None
    d = DTYPE_ALIASES.get(key) if key is not None else None
    if d is None or (allowed is not None and d not in allowed):
        names = ", ".join(allowed) if allowed is not None else ", ".join(sorted(set(DTYPE_ALIASES)))
        raise InputError(f"dtype must be one of {names}, got {_shown(dtype)}")
    return d


def dtype_name(dtype: object) -> str:
    """The Tensor-Core dtype of `dtype` (storage name, but fp32 -> tf32); InputError naming the accepted names."""
    d = dtype_key(dtype)
    return TENSOR_CORE_DTYPE.get(d, d)


def element_bytes(dtype: object) -> int:
    """Bytes of one element of `dtype` as stored in memory (fp32 inputs are 4 bytes)."""
    return BYTES_PER_ELEMENT[dtype_key(dtype)]


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


def _clock(gpu: GPU, clock_mhz: object) -> float:
    if clock_mhz is None:
        return gpu.tensor_clock_mhz
    return number("clock_mhz", clock_mhz, low=0.0, high=MAX_CLOCK_MHZ, low_open=True)


MAX_CLOCK_MHZ = 10_000.0  # no GPU clock is near 10 GHz; a larger one is a unit mistake (Hz for MHz)


def tensor_flops_per_cycle_per_sm(gpu: GPU | str, dtype: str = "bf16") -> int:
    """Dense Tensor-Core FLOPs per cycle per SM: 2 x MACs per Tensor Core x Tensor Cores.

    Hopper bf16: 2 x 512 x 4 = 4096 (2048 multiply-adds per SM per cycle). `gpu` is a GPU or a registry name.
    """
    gpu = get(gpu)
    dt = dtype_name(dtype)
    if dt not in gpu.dense_macs_per_tc_per_cycle:
        raise InputError(
            f"{gpu.name} has no Tensor-Core rate for {dt}; it has {sorted(gpu.dense_macs_per_tc_per_cycle)}"
        )
    return 2 * gpu.dense_macs_per_tc_per_cycle[dt] * gpu.tensor_cores_per_sm


def peak_flops(gpu: GPU | str, dtype: str = "bf16", clock_mhz: float | None = None) -> float:
    """Dense Tensor-Core FLOP/s at `clock_mhz` (default: the datasheet's clock).

    H100 SXM bf16: 4096 x 132 x 1.83e9 = 989.4e12.
    """
    gpu = get(gpu)
    clock = _clock(gpu, clock_mhz)
    return tensor_flops_per_cycle_per_sm(gpu, dtype) * gpu.sms * clock * 1e6


def bandwidth(gpu: GPU | str, level: str, clock_mhz: float | None = None) -> float:
    """Bytes per second of one memory level: 'hbm', 'l2' or 'smem' (all SMs together).

    Shared memory: 32 banks x 4 bytes = 128 B per cycle per SM, at the SM clock.
    HBM does not follow the SM clock; shared memory does.
    """
    gpu = get(gpu)
    lvl = one_of("level", level, LEVELS)
    clock = _clock(gpu, clock_mhz)
    if lvl == "hbm":
        return gpu.hbm_bytes_per_s
    if lvl == "l2":
        return gpu.l2_bytes_per_s
    return gpu.smem_bytes_per_cycle_per_sm * gpu.sms * clock * 1e6


def balance(gpu: GPU | str, level: str = "hbm", dtype: str = "bf16", clock_mhz: float | None = None) -> float:
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
    "l2_bytes_per_s": _L2_UNPUBLISHED
    + ". The H200 (the same GH100 chip) measured 7.7 TB/s of L2 reads (see its entry); the H100 figures are kept unmeasured",
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
        aliases=("h200-sxm", "h200sxm"),
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
            "l2_bytes_per_s": _L2_UNPUBLISHED,
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
            "l2_bytes_per_s": _L2_UNPUBLISHED,
            "smem_carveouts_kb": _CUDA_GUIDE,
        },
    )
)


# Hopper variants: the GH100 SM of the H100 entries, other memory, SM counts and clocks.
_register(
    GPU(
        key="h100-nvl",
        name="NVIDIA H100 NVL 94GB",
        sms=132,
        tensor_clock_mhz=1544,
        max_clock_mhz=1785,
        memory_bytes=94 * 10**9,
        hbm_bytes_per_s=3.9e12,
        l2_bytes=50 * MB,
        l2_bytes_per_s=5.5e12,
        aliases=("h100nvl",),
        sources={
            **_HOPPER_SOURCES,
            "hbm_bytes_per_s": _H100_PAGE,
            "memory_bytes": _H100_PAGE,
            "sms": _H100_PAGE + "; 132 SMs as the H100 SXM",
            "tensor_clock_mhz": "implied by the datasheet's 835 TFLOPS dense bf16 / (4096 x 132)",
            "max_clock_mhz": _H100_PAGE,
        },
        **_hopper_common(),
    )
)
_register(
    GPU(
        key="gh200",
        name="NVIDIA GH200 Grace Hopper (144GB HBM3e)",
        sms=132,
        tensor_clock_mhz=1830,
        max_clock_mhz=1980,
        memory_bytes=144 * 10**9,
        hbm_bytes_per_s=4.9e12,
        l2_bytes=60 * MB,
        l2_bytes_per_s=7.7e12,
        aliases=("gh200-144gb", "grace-hopper"),
        sources={
            **_HOPPER_SOURCES,
            "hbm_bytes_per_s": _GH200_DS + " (HBM3e version, 4.9 TB/s)",
            "memory_bytes": _GH200_DS + " (HBM3e version, 144 GB)",
            "tensor_clock_mhz": _GH200_DS + ": 989 TFLOPS dense bf16, the H100 SXM's figure at its clock",
            "l2_bytes": "the H200's GH100 configuration (60 MiB); NVIDIA's GH200 page gives none",
            "l2_bytes_per_s": ESTIMATE_PREFIX + ": the H200's measured 7.7 TB/s (same chip)",
        },
        **_hopper_common(),
    )
)
_register(
    GPU(
        key="h20",
        name="NVIDIA H20 96GB",
        sms=78,
        # 148 TFLOPS dense bf16 = 78 SMs x 4 TCs x 2 x 128 MACs x 1.853 GHz: NVIDIA does not say how the
        # H20's Tensor-Core rate is cut, so it is modelled as a quarter of the H100's MACs per Tensor Core.
        tensor_clock_mhz=1853,
        max_clock_mhz=1980,
        memory_bytes=96 * 10**9,
        hbm_bytes_per_s=4.0e12,
        l2_bytes=60 * MB,
        l2_bytes_per_s=5.5e12,
        aliases=("h20-96gb",),
        sources={
            **_HOPPER_SOURCES,
            "*": _H20_BRIEF,
            "tensor_clock_mhz": "implied by the brief's 148 TFLOPS dense bf16 / (78 x 4 x 2 x 128)",
            "dense_macs_per_tc_per_cycle": "a quarter of the H100's, matching the brief's 148 / 296 / 74 TFLOPS "
            "(bf16 / fp8 / tf32); the cut's real mechanism is not published",
            "l2_bytes_per_s": _L2_UNPUBLISHED,
        },
        **{
            **_hopper_common(),
            "dense_macs_per_tc_per_cycle": {"bf16": 128, "fp16": 128, "tf32": 64, "fp8": 256, "int8": 256},
        },
    )
)


def _ada_common() -> dict[str, Any]:
    """Ada (sm_89): Ampere's programming model (mma.sync, cp.async; no wgmma, no TMA, no setmaxnreg) with
    fp8 Tensor Cores, a 128 KB L1 / shared SRAM per SM and 1536 threads per SM."""
    return dict(
        _sm_limits(),
        arch="ada",
        compute_capability=(8, 9),
        l1_smem_bytes_per_sm=128 * KB,
        smem_per_sm=100 * KB,
        smem_per_block_optin=99 * KB,
        smem_carveouts_kb=(0, 8, 16, 32, 64, 100),
        max_threads_per_sm=1536,
        max_blocks_per_sm=24,
        fp32_lanes_per_sm=128,
        wgmma=False,
        tcgen05=False,
        tma=False,
    )


_register(
    GPU(
        key="l40s",
        name="NVIDIA L40S 48GB",
        sms=142,
        tensor_clock_mhz=2490,
        max_clock_mhz=2520,
        memory_bytes=48 * 10**9,
        hbm_bytes_per_s=864e9,  # GDDR6, not HBM: the field is the device memory's bandwidth
        l2_bytes=96 * MB,
        l2_bytes_per_s=5.0e12,
        aliases=("l40s-48gb",),
        sources={
            "*": _ADA_WP,
            "memory_bytes": _L40S_DS,
            "hbm_bytes_per_s": _L40S_DS + " (864 GB/s GDDR6)",
            "sms": _L40S_DS + " (18,176 CUDA cores / 128 per SM)",
            "max_clock_mhz": _L40S_DS,
            "tensor_clock_mhz": "implied by the datasheet's 362.05 TFLOPS dense fp16/bf16 / (142 x 4 x 2 x 128)",
            "dense_macs_per_tc_per_cycle": _L40S_DS + ": 362 / 183 / 733 / 733 TFLOPS dense bf16 / tf32 / fp8 / "
            "int8, fp32 accumulate at the full rate",
            "l2_bytes": _L40S_DS,
            "l2_bytes_per_s": _L2_UNPUBLISHED,
            "smem_per_sm": _CC89,
            "smem_per_block_optin": _CC89,
            "max_threads_per_sm": _CC89,
            "max_blocks_per_sm": _CC89,
            "smem_carveouts_kb": _CC89,
        },
        dense_macs_per_tc_per_cycle={"bf16": 128, "fp16": 128, "tf32": 64, "fp8": 256, "int8": 256},
        **_ada_common(),
    )
)
_register(
    GPU(
        key="rtx-4090",
        name="NVIDIA GeForce RTX 4090",
        sms=128,
        tensor_clock_mhz=2520,
        max_clock_mhz=2520,
        memory_bytes=24 * 10**9,
        hbm_bytes_per_s=1008e9,  # GDDR6X
        l2_bytes=72 * MB,
        l2_bytes_per_s=5.0e12,
        aliases=("4090", "rtx4090", "geforce-rtx-4090"),
        sources={
            "*": _ADA_WP,
            "dense_macs_per_tc_per_cycle": _ADA_WP + ": 165.2 / 82.6 / 330.3 / 660.6 TFLOPS dense bf16 / tf32 / "
            "fp8 / int8 with fp32 accumulate (GeForce runs fp32 accumulate at half the fp16-accumulate rate)",
            "tensor_clock_mhz": _ADA_WP + " (2520 MHz boost)",
            "l2_bytes_per_s": _L2_UNPUBLISHED,
            "smem_per_sm": _CC89,
            "smem_per_block_optin": _CC89,
            "max_threads_per_sm": _CC89,
            "max_blocks_per_sm": _CC89,
            "smem_carveouts_kb": _CC89,
        },
        dense_macs_per_tc_per_cycle={"bf16": 64, "fp16": 64, "tf32": 32, "fp8": 128, "int8": 256},
        **_ada_common(),
    )
)

BUILTIN = tuple(_REGISTRY)  # the entries above; `load` adds users' own beside them


# The GPU every part of tilewise assumes when the caller names none: the reports, the advisor, the
# explorer, the model's functions, the benchmarks' model columns and the kernels' CPU-side plans. The H200,
# because every measurement behind tilewise is on one: the calibration of the time model
# (model/calibration/h200.json, the only GPU with one), the sweeps and the committed benchmark results
# (benchmarks/results/h200/), the explorer's measured rows. A default that differs from the machine that
# was measured would print model figures that nothing in the tree can be checked against. (An H200 is an
# H100 SXM's 132 SMs at the same clocks with 4.8 instead of 3.35 TB/s of HBM; the H100 datasheet figures
# the tests check, such as 989.4 TFLOP/s dense bf16, are computed with gpu="h100-sxm".)
DEFAULT_GPU = "h200"


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
    key = _lookup_key(name) if isinstance(name, str) and len(name) <= 200 else None
    if key is None:
        known = ", ".join(sorted(_REGISTRY))
        hint = "; a GPU file is read by tilewise.gpus.load(path)" if is_file(name) else ""
        raise InputError(
            f"unknown GPU {_shown(name)}; expected one of: {known} (or an alias such as 'h100', 'a100'){hint}"
        )
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
    if "gh200" in n:
        return "gh200"
    if "h200" in n:
        return "h200"
    if "h100" in n:
        if "nvl" in n:
            return "h100-nvl"
        return "h100-pcie" if ("pcie" in n or sms == 114) else "h100-sxm"
    if "h20" in n:
        return "h20"
    if "l40s" in n:
        return "l40s"
    if "4090" in n:
        return "rtx-4090"
    if "a100" in n:
        return "a100-sxm"
    if "b200" in n:
        return "b200"
    if sms is None:
        return "h100-sxm"
    # Unknown model: take the closest by SM count; detect() says so in sources.
    return min(BUILTIN, key=lambda k: abs(_REGISTRY[k].sms - sms))


# ------------------------------------------------------------------ a user's own GPU

ARCHS = ("ampere", "ada", "hopper", "blackwell")
# What each architecture's instructions can be: a file may not claim wgmma on Ampere or Ada.
_ARCH_FEATURES = {
    "ampere": {"wgmma": False, "tcgen05": False, "tma": False},
    "ada": {"wgmma": False, "tcgen05": False, "tma": False},
    "hopper": {"wgmma": True, "tcgen05": False},
    "blackwell": {"wgmma": False, "tcgen05": True},
}
_ARCH_DEFAULT = {"ampere": "a100-sxm", "ada": "l40s", "hopper": "h100-sxm", "blackwell": "b200"}
USER_SOURCE = "user file"  # every figure a file gives is sourced "user file PATH" unless it names a source

_INT_FIELDS = {f.name for f in dataclasses.fields(GPU) if f.type in ("int", int) and f.name not in ("key",)}
_FLOAT_FIELDS = {f.name for f in dataclasses.fields(GPU) if f.type in ("float", float)}
_BOOL_FIELDS = {"wgmma", "tcgen05", "tma"}
_FIELDS = {f.name for f in dataclasses.fields(GPU)}


def _read_spec(path: str) -> dict[str, Any]:
    if not isinstance(path, str) or not path.lower().endswith((".toml", ".json")):
        raise InputError(f"a GPU file must be a path ending in .toml or .json, got {_shown(path, PATH_CHARS)}")
    if not os.path.isfile(path):
        raise InputError(
            f"a GPU file must be an existing .toml or .json file, got {_shown(path, PATH_CHARS)} (no such file)"
        )
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 20)
    except OSError as e:
        raise InputError(f"a GPU file must be readable, got {_shown(path, PATH_CHARS)} ({e.strerror})") from None
    try:
        if path.lower().endswith(".json"):
            data = json.loads(raw.decode("utf-8"))
        else:
            if _toml is None:
                raise InputError(
                    f"a TOML GPU file needs Python 3.11+ or the tomli package, got {_shown(path, PATH_CHARS)}"
                )
            data = _toml.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"GPU file {_shown(path, PATH_CHARS)} must be UTF-8 text, got other bytes") from None
    except ValueError as e:  # json.JSONDecodeError and tomllib.TOMLDecodeError are ValueErrors
        kind = path.rsplit(".", 1)[-1].upper()
        raise InputError(
            f"GPU file {_shown(path, PATH_CHARS)} must be valid {kind}, got an error: {clip(str(e), 200)}"
        ) from None
    if isinstance(data, dict) and isinstance(data.get("gpu"), dict) and len(data) == 1:
        data = data["gpu"]  # a [gpu] table
    if not isinstance(data, dict):
        raise InputError(
            f"GPU file {_shown(path, PATH_CHARS)} must hold one table of fields, got {type(data).__name__}"
        )
    return data


def _field(path: str, name: str, value: Any) -> Any:
    """One field of a user file, checked and converted; InputError naming file, field, expected, given."""
    at = f"{path}: {name}"
    if name in ("key", "name"):
        if not isinstance(value, str) or not value.strip() or len(value) > 80:
            raise InputError(f"{at} must be a non-empty string of at most 80 characters, got {_shown(value)}")
        return value.strip()
    if name == "arch":
        return one_of(at, value, ARCHS)
    if name == "compute_capability":
        if isinstance(value, str):
            parts: Any = value.split(".")
        elif isinstance(value, (builtins.list, tuple)):
            parts = value
        else:
            parts = None
        try:
            cc = tuple(int(x) for x in parts) if parts is not None and len(parts) == 2 else None
        except (TypeError, ValueError):
            cc = None
        if cc is None or not (7 <= cc[0] <= 12 and 0 <= cc[1] <= 9):
            raise InputError(f"{at} must be 'MAJOR.MINOR' such as '8.9' (7.0 to 12.9), got {_shown(value)}")
        return cc
    if name in _BOOL_FIELDS:
        if not isinstance(value, bool):
            raise InputError(f"{at} must be true or false, got {_shown(value)}")
        return value
    if name == "dense_macs_per_tc_per_cycle":
        if not isinstance(value, dict) or not value:
            raise InputError(f"{at} must be a table of dtype = MACs per Tensor Core per cycle, got {_shown(value)}")
        out = {}
        for dt, macs in value.items():
            out[one_of(f"{at} key", dt, ("bf16", "fp16", "tf32", "fp8", "int8"))] = whole(
                f"{at}.{dt}", macs, minimum=1, maximum=1 << 16
            )
        return out
    if name == "smem_carveouts_kb":
        if not isinstance(value, (builtins.list, tuple)) or not value:
            raise InputError(
                f"{at} must be a list of shared-memory sizes in KB such as [0, 8, 16, 100], got {_shown(value)}"
            )
        return tuple(sorted({whole(f"{at} entry", v, minimum=0, maximum=1024) for v in value}))
    if name == "aliases":
        if not isinstance(value, (builtins.list, tuple)) or not all(
            isinstance(a, str) and 0 < len(a) <= 40 for a in value
        ):
            raise InputError(f"{at} must be a list of short names, got {_shown(value)}")
        return tuple(a.strip().lower() for a in value)
    if name == "sources":
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise InputError(f"{at} must be a table of field = source text, got {_shown(value)}")
        unknown = sorted(set(value) - _FIELDS - {"*"})
        if unknown:
            raise InputError(f"{at} names unknown fields {unknown}")
        return dict(value)
    if name in _FLOAT_FIELDS:
        return number(at, value, low=0.0, high=1e16, low_open=True)
    if name in _INT_FIELDS:
        lo = 0 if name in ("reserved_smem_per_block",) else 1
        return whole(at, value, minimum=lo, maximum=1 << 50)
    raise InputError(f"{at}: unknown field")  # pragma: no cover - every GPU field is handled above


def load(path: str) -> GPU:
    """A GPU described by the user in a TOML or JSON file, checked field by field and added to the registry.

    The file gives `key`, `name`, `arch` (ampere, ada, hopper or blackwell) and any `GPU` field; the
    others come from `base` (a registry entry, default: the architecture's reference GPU, e.g. l40s for
    ada). Every figure the file gives is sourced "user file PATH" unless `sources` names another source;
    the reports call them datasheet figures (none measured by tilewise). Afterwards `get(key)` finds it.

        key = "my-l4"
        name = "NVIDIA L4"
        arch = "ada"
        sms = 58
        tensor_clock_mhz = 2040
        memory_bytes = 24e9
        hbm_bytes_per_s = 300e9
        l2_bytes = 50331648

    Raises InputError naming the file, the field, what was expected and what was given.
    """
    data = _read_spec(path)
    unknown = sorted(set(data) - _FIELDS - {"base"})
    if unknown:
        raise InputError(
            f"{path}: unknown fields {_shown(unknown)}; a GPU file may set base and any of {', '.join(sorted(_FIELDS))}"
        )
    for required in ("key", "name", "arch"):
        if required not in data:
            raise InputError(f"{path}: {required} is required (key, name and arch name the GPU), got none")
    fields = {k: _field(path, k, v) for k, v in data.items() if k != "base"}
    arch = fields["arch"]
    base_name = data.get("base", _ARCH_DEFAULT[arch])
    if not isinstance(base_name, str):
        raise InputError(f"{path}: base must be a registry name such as {_ARCH_DEFAULT[arch]}, got {_shown(base_name)}")
    base = get(base_name)
    key = fields["key"].lower().replace(" ", "-")
    if key in BUILTIN or _lookup_key(key) in BUILTIN:
        raise InputError(
            f"{path}: key must not be a built-in registry name, got {_shown(key)}; name your GPU otherwise"
        )
    fields["key"] = key
    fields.setdefault("aliases", ())
    if "compute_capability" not in fields and base.arch != arch:
        fields["compute_capability"] = {"ampere": (8, 0), "ada": (8, 9), "hopper": (9, 0), "blackwell": (10, 0)}[arch]
    for feat, v in _ARCH_FEATURES[arch].items():
        if fields.get(feat, v) != v:
            raise InputError(f"{path}: {feat} must be {str(v).lower()} on {arch}, got {str(fields[feat]).lower()}")
        fields.setdefault(feat, v)
    given_sources = fields.pop("sources", {})
    src = f"{USER_SOURCE} {path}"
    sources = {**base.sources, **{k: src for k in fields if k not in ("key", "aliases")}, **given_sources}
    if base.key != arch:
        sources["*"] = f"{src}: the fields it does not give are the {base.name}'s ({base.sources.get('*', '')})"
    gpu = dataclasses.replace(base, **fields, sources=sources)
    _check_consistent(path, gpu)
    old = _REGISTRY.get(key)
    if old is not None and old != gpu:
        raise InputError(f"{path}: GPU {_shown(key)} is already loaded with other figures; give this file another key")
    _REGISTRY[key] = gpu
    return gpu


def _check_consistent(path: str, g: GPU) -> None:
    """Rules between fields that a model relies on (each one names the fields)."""
    rules = [
        (g.smem_per_block_default <= g.smem_per_block_optin, "smem_per_block_default <= smem_per_block_optin"),
        (g.smem_per_block_optin <= g.smem_per_sm, "smem_per_block_optin <= smem_per_sm"),
        (g.smem_per_sm <= g.l1_smem_bytes_per_sm, "smem_per_sm <= l1_smem_bytes_per_sm"),
        (g.smem_per_sm // KB in g.smem_carveouts_kb, "smem_per_sm (in KB) is one of smem_carveouts_kb"),
        (g.max_threads_per_block <= g.max_threads_per_sm, "max_threads_per_block <= max_threads_per_sm"),
        (g.max_threads_per_sm % g.warp_size == 0, "max_threads_per_sm is a multiple of warp_size"),
        (g.warp_size == 32, "warp_size is 32 (every NVIDIA GPU)"),
        (g.regs_per_block <= g.regs_per_sm, "regs_per_block <= regs_per_sm"),
        (g.max_regs_per_thread <= 255, "max_regs_per_thread <= 255"),
        (g.tensor_clock_mhz <= MAX_CLOCK_MHZ and g.max_clock_mhz <= MAX_CLOCK_MHZ, "clocks in MHz (< 10,000)"),
        (g.l2_bytes < g.memory_bytes, "l2_bytes < memory_bytes"),
        ("bf16" in g.dense_macs_per_tc_per_cycle, "dense_macs_per_tc_per_cycle has bf16"),
    ]
    for ok, rule in rules:
        if not ok:
            raise InputError(f"{path}: the fields must satisfy {rule}, got {_describe_rule(g, rule)}")


def _describe_rule(g: GPU, rule: str) -> str:
    names = [w for w in rule.replace("(", " ").replace(")", " ").split() if w in _FIELDS]
    return ", ".join(f"{n} = {getattr(g, n)!r}" for n in dict.fromkeys(names))


def is_file(name: object) -> bool:
    """Whether a --gpu value names a GPU file rather than a registry entry."""
    return isinstance(name, str) and name.strip().lower().endswith((".toml", ".json"))


def resolve(name: str | GPU) -> GPU:
    """`get(name)`, or `load(name)` when it is a .toml / .json path (the CLI's --gpu accepts both).

    Only the command line resolves paths: the explorer's requests go through `get`, so a request cannot
    make the server read a file."""
    if is_file(name):
        return load(name)  # type: ignore[arg-type]
    return get(name)


def forget(key: str) -> None:
    """Remove a GPU that `load` added (a built-in entry cannot be removed)."""
    if key in BUILTIN:
        raise InputError(f"key must name a GPU loaded from a file, got the built-in {_shown(key)}")
    _REGISTRY.pop(key, None)


def is_user(gpu: GPU) -> bool:
    """Whether `gpu` came from a user's file (its figures are the user's, not the registry's)."""
    return gpu.key not in BUILTIN
