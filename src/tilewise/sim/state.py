"""What every part of the warp executor reads of one launch in progress.

`runtime.Executor` is built from mixins, one per job (`control.ControlFlow`: the mask stack,
`recording.AccessRecorder`: the per-line statistics, `hazards.HazardTracker`: shared-memory races,
`intrinsics.Intrinsics`: what the builtins do). Each reads state the others and the executor set;
`LaunchState`, their common base, names that state and the methods one mixin calls on another, so each
mixin's file says what it relies on. It holds no data and no behaviour of its own: the executor sets every
field (`Executor.__init__`, `Executor.start_block`), and each method below is defined by the mixin named
beside it, which comes before this class in the executor's method order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from numpy.typing import NDArray

if TYPE_CHECKING:
    from tilewise.sim.hazards import Hazard
    from tilewise.sim.memory import MemArray
    from tilewise.sim.recording import SiteStats
    from tilewise.sim.runtime import Kernel

Lanes = NDArray[Any]  # one value per thread of the block (a bool mask, thread ids, a per-thread value)


class LaunchState:
    """The fields and cross-calls of `runtime.Executor` (see the module doc)."""

    # the launch
    kern: Kernel
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    n: int  # threads per block
    nwarps: int
    pad: int  # threads that pad the last warp to 32 lanes
    tid: Lanes
    tx: Lanes
    ty: Lanes
    tz: Lanes
    lane: Lanes
    all_lanes: Lanes
    no_lanes: Lanes
    shared_dyn: int  # dynamic shared memory bytes
    smem: NDArray[Any]  # the block's shared memory, bytes
    check_hazards: bool
    tracing: bool
    max_steps: int | None
    time_limit: float | None
    deadline: float | None
    # what the launch records
    sites: dict[int, SiteStats]
    lines: dict[int, list[Any]]
    hazards: dict[tuple[Any, ...], Hazard]
    touched: dict[int, dict[str, Any]]
    synthetic: dict[int, tuple[Any, ...]]
    # the block being run
    bidx: tuple[int, ...]
    steps: int
    next_check: int
    dead: Lanes  # threads that returned
    mask: Lanes  # threads active at this statement
    stack: list[Any]  # control-flow frames (control.IfFrame, control.LoopFrame)
    epoch: int  # __syncthreads() count in this block
    static_cursor: int  # the next static shared array's offset
    static_bytes: int
    max_shared: int  # the most shared memory a block of the launch used
    running: bool  # True while launch() runs the executor
    wsync: NDArray[Any]  # __syncwarp() count per warp

    def load(self, obj: MemArray, idx: Any, site: int | None) -> Any:  # runtime.Executor
        raise NotImplementedError

    def store(self, obj: MemArray, idx: Any, value: Any, site: int | None) -> Any:  # runtime.Executor
        raise NotImplementedError

    def tick(self, line: int) -> None:  # control.ControlFlow
        raise NotImplementedError

    def check_limits(self, line: int) -> None:  # runtime.Executor
        raise NotImplementedError

    def index(self, obj: MemArray, idx: Any) -> Any:  # runtime.Executor
        raise NotImplementedError

    def out_of_bounds(self, obj: MemArray, flatv: Any, oob: Any, site: Any, line: int | None = None) -> None:
        raise NotImplementedError  # hazards.HazardTracker

    def line_site(self, line: int, text: str) -> int:  # recording.AccessRecorder
        raise NotImplementedError

    def site_line(self, site: int | None) -> int:  # recording.AccessRecorder
        raise NotImplementedError

    def record(self, site: int, obj: MemArray, addr: Any, m: Any, op: str, atomic: bool | str = True) -> Any:
        raise NotImplementedError  # recording.AccessRecorder

    def record_cas_loop(self, site: int, line: int, obj: MemArray, r: Any) -> None:  # recording.AccessRecorder
        raise NotImplementedError

    def touch(self, obj: MemArray, flatv: Any, ok: Any, op: str) -> None:  # recording.AccessRecorder
        raise NotImplementedError


__all__ = ["Lanes", "LaunchState"]
