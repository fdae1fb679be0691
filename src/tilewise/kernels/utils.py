"""Torch-side helpers every kernel launcher shares: one of each.

* `interpreting()`: is Triton's CPU interpreter on (TRITON_INTERPRET=1)?
* `sm_count(device)`: the device's SMs; on the CPU (the interpreter) the registry's `CPU_GPU` entry,
  so a plan made on the CPU is the one the H200 would get.
* `gpu_key(device)`: the registry entry of the device the tensors live on.
* `counters(device, n)`: a zeroed int32 buffer of grid counters that the kernels set back to zero.
* `workspace(device, n_counters, n, dtype, pool)`: counters and a scratch buffer kept per stream.
* `flat_rows(t)`: is a [B, H, S, D] tensor one row-major [B*H*S, D] matrix (a 2-D TMA view)?
* `long_kernel(device, flops, nbytes, dtype)`: long enough on the GPU to hide TMA descriptors' host cost?
* `PlanCache`: the launch plan of a call, looked up by its signature (shapes, strides, dtype, device):
  a dict lookup on a tuple instead of re-deriving checks, tiles and grids every call.
* `Launcher`: one kernel launch of a plan; after the first call it launches through the compiled
  kernel Triton returned, which skips the JIT's argument binding and specialization (version-guarded).

Integer helpers (`cdiv`, `next_power_of_2`) are pure Python and live in `tilewise.util`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

from tilewise import gpus as _gpus
from tilewise.model import roofline as _roofline

# The registry entry the CPU interpreter plans for (its SM count, its shared memory): the default GPU.
CPU_GPU = _gpus.DEFAULT_GPU


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET set and not 0)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _index(device: torch.device) -> int:
    return int(device.index if device.index is not None else torch.cuda.current_device())


@functools.lru_cache(maxsize=16)
def _cuda_sms(index: int) -> int:
    return int(torch.cuda.get_device_properties(index).multi_processor_count)


def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of `device` (asked once per device); the registry's CPU_GPU off the GPU."""
    if device.type == "cuda":
        return _cuda_sms(_index(device))
    return _gpus.get(CPU_GPU).sms


@functools.lru_cache(maxsize=16)
def _cuda_key(index: int) -> str:
    return _gpus.key_for_device(torch.cuda.get_device_name(index), _cuda_sms(index))


def gpu_key(device: torch.device) -> str:
    """Registry key of the device the tensors live on (CPU_GPU on the CPU interpreter)."""
    if device.type != "cuda":
        return CPU_GPU
    return _cuda_key(_index(device))


@functools.lru_cache(maxsize=16)
def _cuda_capability(index: int) -> tuple[int, int]:
    major, minor = torch.cuda.get_device_capability(index)
    return int(major), int(minor)


def capability(device: torch.device) -> tuple[int, int]:
    """Compute capability of a CUDA device (asked once per device); (0, 0) off the GPU."""
    return _cuda_capability(_index(device)) if device.type == "cuda" else (0, 0)


# Grid counters: kernels whose programs meet (split-K tiles, the last program of a full sum) count
# arrivals in a zeroed int32 buffer per (pool, device, stream), and the last program sets its counter
# back to zero, so no memset kernel runs per call (a launch costs ~3 us: 3% of the 64 x 24576 x 8192 GEMM).
_COUNTERS: dict[tuple[Any, ...], torch.Tensor] = {}
# torch's current raw stream, the call Triton's own driver makes (a Stream object costs ~1 us more)
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def current_stream(device: torch.device) -> int:
    """The raw handle of `device`'s current CUDA stream (0 off the GPU)."""
    if device.type != "cuda":
        return 0
    if _raw_stream is not None:
        return int(_raw_stream(_index(device)))
    return int(torch.cuda.current_stream(device).cuda_stream)


# Per-stream buffers kept between calls: grid counters (`counters`) and scratch (`workspace`), for kernels whose
# programs meet through counters and partial results (split-K GEMM, the split sums of `sum`, the split-KV
# partials of `decode_attention`): a per-call torch.empty costs the host 2-4 us on the H200's host, as much as a
# third of a short call. Kernels on one stream run one after another, so they may share a stream's buffers. A
# buffer that grows keeps the old one alive (`_RETIRED`): a CUDA graph captured with it still holds its address.
_SCRATCH: dict[tuple[Any, ...], torch.Tensor] = {}
_RETIRED: list[torch.Tensor] = []


def _kept(store: dict[tuple[Any, ...], torch.Tensor], key: tuple[Any, ...], n: int, make: Any) -> torch.Tensor:
    """store[key] if it holds >= n elements, else a new buffer from `make(old)` (the old one retired)."""
    buf = store.get(key)
    if buf is None or buf.numel() < n:
        if buf is not None:
            _RETIRED.append(buf)
        buf = store[key] = make(buf)
    return buf


def _zeroed_counters(device: torch.device, n: int) -> Any:
    return lambda old: torch.zeros(max(n, 1024), dtype=torch.int32, device=device)


def counters(device: torch.device, n: int, pool: str = "grid") -> torch.Tensor:
    """A zeroed int32 buffer of at least n counters for `device`'s current stream (kept between calls).

    Kernels that may run back to back on one stream share a pool; each kernel sets back what it used."""
    return _kept(_COUNTERS, (pool, device, current_stream(device)), n, _zeroed_counters(device, n))


def workspace(device: torch.device, n_counters: int, n: int, dtype: torch.dtype, pool: str) -> Any:
    """(counters, scratch) for `device`'s current stream, kept between calls: >= n_counters zeroed int32
    counters of `pool` (the kernels set back what they used) and >= n elements of `dtype` (contents undefined)."""
    stream = current_stream(device)
    cnt = _kept(_COUNTERS, (pool, device, stream), n_counters, _zeroed_counters(device, n_counters))
    buf = _kept(
        _SCRATCH, (pool, device, stream, dtype), n,
        lambda old: torch.empty(max(n, 4096, 2 * (0 if old is None else old.numel())), dtype=dtype, device=device),
    )  # fmt: skip
    return cnt, buf


# TMA descriptors cost host time per call: each is built in Python and encoded by Triton's launcher, which
# then walks every kernel argument in Python (a few us per call on top of a ~10 us launch on the H200 host).
# On the GPU they ran within 1-2% of plain loads (attention D 128: 492 vs 498 TFLOP/s; grouped GEMM
# m128n128k64: 247.6 vs 249.3 us), so a default plan takes them only for kernels the model says run at
# least this long, where the host's extra microseconds hide behind the GPU.
DESC_MIN_SECONDS = 50e-6


def long_kernel(device: torch.device, flops: float, nbytes: float, dtype: torch.dtype) -> bool:
    """True when the roofline (`tilewise.model.roofline`) puts the kernel at >= DESC_MIN_SECONDS on `device`."""
    name = {torch.float16: "fp16", torch.bfloat16: "bf16"}.get(dtype, "tf32")
    return _roofline.time(gpu_key(device), flops, nbytes, name).time_s >= DESC_MIN_SECONDS


def flat_rows(t: torch.Tensor) -> bool:
    """True when a 4-D [B, H, S, D] tensor is one row-major [B*H*S, D] matrix (what a 2-D TMA descriptor needs)."""
    b, h, s, d = t.shape
    st = t.stride()
    return bool(st[3] == 1 and st[2] == d and st[1] == s * d and (st[0] == h * s * d or b == 1))


def aligned16(t: torch.Tensor) -> bool:
    """True when the tensor's first element sits on a 16-byte boundary (Triton specializes pointers on it)."""
    return bool(t.data_ptr() % 16 == 0)


def contiguous_strides(shape: Any) -> tuple[Any, ...]:
    """Row-major strides of `shape` (what torch.empty would give): plans keep them for torch.empty_strided,
    which cost the H200's host 2.0 us per call against torch.empty's 3.1 (host_launch_profile.json)."""
    strides, step = [], 1
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))


def signature(t: torch.Tensor | None) -> tuple[Any, ...] | None:
    """What a launch plan depends on in a tensor: shape, strides, dtype, device and 16-byte alignment (None: None)."""
    return None if t is None else (t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16 == 0)


class PlanCache(dict[Any, Any]):
    """Launch plans by call signature. Bounded: past `limit` plans the cache starts over (a decode loop
    with growing host-side lengths makes a new signature per step)."""

    def __init__(self, limit: int = 4096) -> None:
        super().__init__()
        self.limit = limit
        self.misses = 0

    def put(self, key: Any, plan: Any) -> Any:
        if len(self) >= self.limit:
            self.clear()
        self.misses += 1
        self[key] = plan
        return plan


# --------------------------------------------------------------------------- launching

# `kernel[grid](...)` goes through JITFunction.run: it binds every argument, computes each one's
# specialization (dtype, 16-byte alignment, == 1) and hashes them into the key of its kernel cache,
# every call. A plan's signature already fixes all of that, so after the first launch a `Launcher`
# goes straight to the compiled kernel that the launch returned. Two ways, fastest first:
#
# * "direct": the call CompiledKernel's runner ends in - `CudaLauncher.launch(...)`, the C entry point -
#   with the function handle, packed metadata and argument layout read once. Skipped per call: the
#   runner's torch.cuda.current_device(), its launch_metadata() (a LazyDict per call: the hooks are never
#   None but empty HookChains), CudaLauncher.__call__ (two nested functions and the scratch allocations a
#   kernel without scratch does not make) and the C launcher's two calls of the empty chains. The two
#   argument layouts are those of triton 3.6 (per-kernel C module, kernel arguments spread) and 3.9 (one
#   C launcher, a tuple of kernel arguments with their annotations); kernels with global/profile scratch,
#   GSan or other versions take the runner; so does every call while a launch hook is set (proton).
# * "runner": `compiled[grid](*every_argument)`, the call Triton's fused-softmax tutorial makes.
#
# The interpreter or TILEWISE_JIT_LAUNCH=1 keep the JIT path ("jit").
_VERSION = tuple(int(x) for x in triton.__version__.split(".")[:2] if x.isdigit())
FAST_LAUNCH_VERSIONS = ((3, 6), (3, 7), (3, 8), (3, 9))
DIRECT_LAUNCH_VERSIONS = ((3, 6), (3, 9))  # the argument layouts read in their sources
_get_device = getattr(torch._C, "_cuda_getDevice", None)


def fast_launch_enabled() -> bool:
    """Whether a Launcher may call the compiled kernel directly (see above)."""
    return _VERSION in FAST_LAUNCH_VERSIONS and not interpreting() and not os.environ.get("TILEWISE_JIT_LAUNCH")


def _runtime_knobs() -> Any:
    """triton.knobs.runtime (its launch hooks), or None on a Triton without knobs."""
    knobs = getattr(triton, "knobs", None)
    return getattr(knobs, "runtime", None)


def _hooked(rt: Any) -> bool:
    """Whether a launch hook is set: triton 3.6-3.9 keep each as a HookChain (empty unless a profiler such as
    proton adds to it; the runner then builds launch metadata and the C launcher calls the chain); a hook
    assigned as a plain function counts as set."""
    enter, leave = rt.launch_enter_hook, rt.launch_exit_hook
    return (enter is not None and getattr(enter, "calls", True)) or (
        leave is not None and getattr(leave, "calls", True)
    )


def direct_launch(compiled: Any, grid: tuple[Any, ...], tail: tuple[Any, ...]) -> Any:
    """A function of the runtime arguments that launches `compiled` on `grid` (three entries) with the
    constexpr `tail`, through the C entry point; None where that is not known to be safe (see above)."""
    rt = _runtime_knobs()
    cl: Any = getattr(compiled, "run", None)
    launch = getattr(cl, "launch", None)
    if _VERSION not in DIRECT_LAUNCH_VERSIONS or rt is None or launch is None or _get_device is None:
        return None
    scratch = getattr(cl, "global_scratch_size", 1) or getattr(cl, "profile_scratch_size", 1)
    if _raw_stream is None or scratch:
        return None
    if getattr(cl, "gsan_enabled", False):
        return None
    g0, g1, g2 = grid
    function, meta = compiled.function, compiled.packed_metadata
    coop, pdl = cl.launch_cooperative_grid, cl.launch_pdl
    runner = compiled[grid]
    stream, device = _raw_stream, _get_device
    if _VERSION == (3, 9):
        annotations, signature = getattr(cl, "arg_annotations", None), getattr(cl, "kernel_signature", None)
        if annotations is None or signature is None:
            return None

        def go_39(*args: Any) -> Any:
            if _hooked(rt):
                return runner(*args, *tail)
            launch(g0, g1, g2, stream(device()), function, coop, pdl, meta, None, None, None, None, None,
                   annotations, signature, (*args, *tail))  # fmt: skip

        return go_39

    def go(*args: Any) -> Any:  # triton 3.6
        if _hooked(rt):
            return runner(*args, *tail)
        launch(g0, g1, g2, stream(device()), function, coop, pdl, None, None, meta, None, None, None, *args, *tail)

    return go


class Launcher:
    """One launch of `kernel` on `grid` with fixed compile-time arguments and options.

    `consts` holds the kernel's constexpr arguments by name; they must be its trailing parameters
    (every tilewise kernel lists its meta-parameters last). Call with the runtime arguments in order.
    `path` says how the last call launched: "jit", "runner" or "direct" (see above).
    """

    __slots__ = ("consts", "fast", "grid", "kernel", "options", "path", "run", "tail")

    def __init__(self, kernel: Any, grid: tuple[Any, ...], consts: dict[str, Any], **options: Any) -> None:
        self.kernel = kernel
        self.grid = grid
        self.consts = consts
        self.options = options
        self.run: Callable[..., Any] | None = None
        self.path = "jit"
        names: Any = getattr(kernel, "arg_names", None)
        self.fast = bool(names) and list(names[len(names) - len(consts) :]) == list(consts) and fast_launch_enabled()
        self.tail = tuple(consts.values())

    def __call__(self, *args: Any) -> None:
        run = self.run
        if run is not None:
            run(*args)
            return
        compiled = self.kernel[self.grid](*args, **self.consts, **self.options)
        if self.fast and compiled is not None and len(args) + len(self.tail) == len(self.kernel.arg_names):
            grid = (*self.grid, 1, 1)[:3]  # the compiled kernel's runner reads grid[0], grid[1] and grid[2]
            try:
                go = direct_launch(compiled, grid, self.tail)
            except Exception:  # an unexpected CompiledKernel: the runner below
                go = None
            if go is not None:
                self.run, self.path = go, "direct"
                return
            try:
                runner = compiled[grid]
            except Exception:  # a Triton without CompiledKernel.__getitem__: stay on the JIT path
                self.fast = False
                return
            tail = self.tail
            self.run = lambda *a: runner(*a, *tail)
            self.path = "runner"


@triton.jit  # type: ignore[untyped-decorator]  # triton is read as Any (unchecked)
def empty_kernel(x_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]  # a Triton kernel: Triton types its arguments
    """Does nothing: `tilewise bench overhead` times its launch, Triton's own cost per call."""
    pass


__all__ = [
    "CPU_GPU",
    "DESC_MIN_SECONDS",
    "DIRECT_LAUNCH_VERSIONS",
    "FAST_LAUNCH_VERSIONS",
    "Launcher",
    "PlanCache",
    "aligned16",
    "capability",
    "contiguous_strides",
    "counters",
    "current_stream",
    "direct_launch",
    "empty_kernel",
    "fast_launch_enabled",
    "flat_rows",
    "gpu_key",
    "interpreting",
    "long_kernel",
    "signature",
    "sm_count",
    "workspace",
]
