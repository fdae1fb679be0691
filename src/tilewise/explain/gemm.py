"""`tilewise explain gemm`: a GEMM walked from the grid down to the Tensor Core.

The default is an LLM decode projection: C[64, 24576] =
A[64, 8192] x B[8192, 24576] in bf16, 64 x 128 output tiles, BLOCK_K 16, 256 threads,
on an H100 SXM. Every figure below is computed from the problem and the GPU registry;
tests/test_explain_gemm.py asserts the figures (192 blocks, 1.45 waves, 2 KB +
4 KB, 512 K steps, 8 warps, 8192 FLOPs per MMA, 1/TS traffic, 295 FLOP/B, 6.25%).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from tilewise import gpus as _gpus
from tilewise import validate
from tilewise.errors import InputError, cli_int, parse_size, require, shown
from tilewise.explain.predicted import prediction
from tilewise.explain.report import (
    Report,
    fmt_bytes,
    fmt_flops,
    fmt_intensity,
    fmt_kib,
    fmt_time,
    pct,
)
from tilewise.model import decode, mma, roofline, traffic, waves
from tilewise.model.occupancy import Occupancy, occupancy
from tilewise.util import cdiv

DEFAULTS = dict(
    m=64, n=24576, k=8192, dtype="bf16", gpu=_gpus.DEFAULT_GPU, tile="64x128", block_k=16, threads=256, stages=2
)
MMA_SHAPE = (16, 16, 16)  # the wmma fragment for 16-bit types: m16 n16 k16 (tf32: k8)
TILE_MAX = 256


def mma_shape(dtype: str) -> tuple[int, int, int]:
    """The wmma 16 x 16 fragment with K = 32 bytes of a row: k16 (bf16/fp16/int8), k8 (tf32), k32 (fp8)."""
    return (MMA_SHAPE[0], MMA_SHAPE[1], mma.k_of(dtype))


def parse_tile(text: object) -> tuple[int, int]:
    """'64x128' or (64, 128) -> (64, 128); anything else is an InputError naming what was given."""
    if isinstance(text, str):
        parts = text.lower().replace("×", "x").split("x")
        if len(parts) != 2:
            raise InputError(f"tile must look like MxN (e.g. 64x128), got {shown(text)}")
        try:
            bm, bn = int(parts[0]), int(parts[1])
        except ValueError:
            raise InputError(f"tile must look like MxN with integers (e.g. 64x128), got {shown(text)}") from None
    elif isinstance(text, (tuple, list)) and len(text) == 2:
        bm, bn = text
    else:
        raise InputError(f"tile must be 'MxN' (e.g. '64x128') or a pair (M, N), got {shown(text)}")
    return validate.size("tile M", bm, maximum=TILE_MAX), validate.size("tile N", bn, maximum=TILE_MAX)


def explain(
    m: int = 64,
    n: int = 24576,
    k: int = 8192,
    dtype: str = "bf16",
    gpu: str = _gpus.DEFAULT_GPU,
    tile: str | tuple[int, int] = "64x128",
    block_k: int = 16,
    threads: int = 256,
    stages: int = 2,
    registers: int = 128,
) -> Report:
    """Build the report for C[m, n] = A[m, k] x B[k, n] with one output tile per block."""
    m, n, k = validate.size("m", m), validate.size("n", n), validate.size("k", k)
    g = _gpus.get(gpu)
    dt = _gpus.dtype_name(dtype)
    e = _gpus.element_bytes(dtype)
    bm, bn = parse_tile(tile)
    block_k = validate.size("block_k", block_k, maximum=512)
    threads = validate.size("threads", threads, maximum=g.max_threads_per_block)
    stages = validate.size("stages", stages, maximum=16)
    registers = validate.size("registers", registers, maximum=g.max_regs_per_thread)
    require(threads % g.warp_size == 0, f"threads must be a multiple of {g.warp_size}, got {threads}")
    native = mma.path(g, dt)  # first: refuses a dtype this GPU's Tensor Cores lack (fp8 on an A100)
    mm, mn, mk = mma_shape(dt)
    require(bm % mm == 0 and bn % mn == 0, f"tile must be a multiple of the {mm}x{mn} MMA fragment, got {bm}x{bn}")
    require(block_k % mk == 0, f"block_k must be a multiple of the MMA's k = {mk} ({dt}), got {block_k}")
    validate.fits_memory(g, {"A": m * k * e, "B": k * n * e, "C": m * n * e}, "A, B and C")
    p = _Gemm(m, n, k, dtype, dt, e, g, native, bm, bn, block_k, threads, stages, registers)
    require(
        p.stage_smem <= g.smem_per_block_optin,
        f"stages x (tile M x block_k + block_k x tile N) x {e} B = {stages} x ({bm} x {block_k} + {block_k} x {bn}) "
        f"x {e} = {p.stage_smem} bytes of shared memory must fit the {g.name}'s {g.smem_per_block_optin} per block; "
        "use fewer stages, a smaller tile or block_k",
    )
    r = _report(p)

    flops, nbytes, b_b = _problem(r, p)
    _tiling(r, p)
    occ, w1 = _waves(r, p)
    _block(r, p)
    _mma(r, p)
    _traffic(r, p, nbytes)
    rf = _roofline(r, p, flops, nbytes)
    fill16 = _padding(r, p)
    _occupancy(r, p, occ)
    _advice(r, p, rf, b_b, w1, fill16)
    return r


@dataclass(frozen=True)
class _Gemm:
    """The checked problem every step reads: sizes, dtype (as given and as computed), GPU, MMA path, the block."""

    m: int
    n: int
    k: int
    dtype: str  # as given: fp32 stores 4 bytes per element and computes as tf32
    dt: str  # the Tensor Cores' dtype
    e: int
    g: _gpus.GPU
    native: mma.MmaPath
    bm: int
    bn: int
    block_k: int
    threads: int
    stages: int
    registers: int

    @property
    def grid(self) -> tuple[int, int]:
        """Output tiles along M and N: one block each."""
        return cdiv(self.m, self.bm), cdiv(self.n, self.bn)

    @property
    def blocks(self) -> int:
        gm, gn = self.grid
        return gm * gn

    @property
    def trips(self) -> int:
        """Steps of the K loop."""
        return cdiv(self.k, self.block_k)

    @property
    def warps(self) -> int:
        return self.threads // self.g.warp_size

    @property
    def stage_smem(self) -> int:
        """Shared memory of the A and B tiles over all stages."""
        return self.stages * (self.bm * self.block_k + self.block_k * self.bn) * self.e


def _report(p: _Gemm) -> Report:
    m, n, k, dtype, dt, g, bm, bn, block_k = p.m, p.n, p.k, p.dtype, p.dt, p.g, p.bm, p.bn, p.block_k
    threads, stages, registers = p.threads, p.stages, p.registers
    r = Report.on_gpu(
        kind="gemm",
        title=f"GEMM C[{m}, {n}] = A[{m}, {k}] x B[{k}, {n}] ({dt}) on {g.name}",
        gpu=g,
        inputs=dict(
            m=m, n=n, k=k, dtype=dt, tile=[bm, bn], block_k=block_k, threads=threads, stages=stages, registers=registers
        ),
    )
    if _gpus.dtype_key(dtype) != dt:  # fp32 asked, tf32 computed: say so rather than change it silently
        r.notes.append(
            f"dtype {_gpus.dtype_key(dtype)}: the GEMM runs on the Tensor Cores as {dt} (fp32 storage, 4 bytes per "
            f"element, products of 10-bit mantissas summed in fp32); the rates below are {dt}'s."
        )
    if bm > m or bn > n:
        r.notes.append(
            f"The {bm} x {bn} tile is larger than C [{m}, {n}]: each block computes a padded tile of which "
            f"{pct(min(m, bm) * min(n, bn) / (bm * bn))} is real; the counts below are for the padded tile."
        )
    if block_k > k:
        r.notes.append(
            f"block_k = {block_k} is longer than K = {k}: the K loop is one step with {pct(k / block_k)} of it real."
        )
    return r


def _problem(r: Report, p: _Gemm) -> tuple[int, int, int]:
    m, n, k, dtype, e = p.m, p.n, p.k, p.dtype, p.e
    # 1. The work and the bytes.
    flops = traffic.gemm_flops(m, n, k)
    nbytes = traffic.gemm_bytes(m, n, k, dtype)
    a_b, b_b, c_b = m * k * e, k * n * e, m * n * e
    s = r.step("problem", "The work and the bytes", flops=flops, bytes=nbytes, a_bytes=a_b, b_bytes=b_b, c_bytes=c_b)
    s.say(f"2 x {m} x {n} x {k} = {fmt_flops(flops)} ({flops:,} FLOPs).")
    s.say(
        f"Fewest bytes: A {fmt_bytes(a_b)} + B {fmt_bytes(b_b)} ({b_b / 2**20:.0f} MiB) + C {fmt_bytes(c_b)} "
        f"= {fmt_bytes(nbytes)}, each read or written once."
    )
    return flops, nbytes, b_b


def _tiling(r: Report, p: _Gemm) -> None:
    m, n, k, bm, bn, blocks = p.m, p.n, p.k, p.bm, p.bn, p.blocks
    gm, gn = p.grid
    # 2. Output-stationary tiling and the grid.
    s = r.step(
        "tiling",
        "Output-stationary tiling: one block per output tile",
        grid=[gm, gn],
        blocks=blocks,
        tile=[bm, bn],
        padded_tile_share=(m * n) / (gm * bm * gn * bn),
    )
    s.say(
        f"C is cut into {bm} x {bn} tiles: ceil({m}/{bm}) x ceil({n}/{bn}) = {gm} x {gn} = {blocks} blocks. "
        f"Each block owns its tile, walks all of K, and keeps the accumulator in registers: C is written once."
    )
    s.say(f"Each block reads A's rows [{bm}, {k}] and B's columns [{k}, {bn}]; blocks never talk to each other.")


def _waves(r: Report, p: _Gemm) -> tuple[Occupancy, waves.Waves]:
    g, blocks = p.g, p.blocks
    # 3. Waves over the SMs.
    occ = occupancy(g, p.threads, p.registers, 0, p.stage_smem)
    w1 = waves.grid_waves(blocks, g.sms, 1)
    wk = waves.grid_waves(blocks, g.sms, max(occ.blocks_per_sm, 1))
    s = r.step(
        "waves",
        "Waves over the SMs",
        sms=g.sms,
        waves=w1.waves,
        rounds=w1.rounds,
        tail_blocks=w1.tail_blocks,
        tail_efficiency=w1.efficiency,
        blocks_per_sm=occ.blocks_per_sm,
        waves_resident=wk.waves,
        efficiency_resident=wk.efficiency,
    )
    if blocks < g.sms:
        s.say(
            f"{blocks} blocks on {g.sms} SMs = {w1.waves:.2f} of a wave: {g.sms - blocks} SMs get no block at all, "
            f"so the grid uses {pct(w1.efficiency)} of the machine."
        )
    else:
        s.say(
            f"{blocks} blocks on {g.sms} SMs = {w1.waves:.2f} waves: {w1.full_waves} full wave(s) and a tail of "
            f"{w1.tail_blocks} blocks. One block per SM at a time, the grid uses {pct(w1.efficiency)} of the SM-rounds."
        )
    sk = waves.stream_k_summary(*p.grid, p.trips, g.sms) if w1.efficiency < 0.9 else None
    if sk is not None:
        s.values["stream_k"] = sk
        s.say(
            f"Stream-K (the Gluon GEMM's stream_k=True) would deal the {blocks} tiles' {blocks * p.trips} K steps "
            f"over {sk['grid']} CTAs, {sk['per_lane']} per row of tiles: the busiest runs {sk['busiest_steps']} "
            f"steps, {pct(sk['efficiency'])} of the SM time doing work, and {sk['partials']} tile parts become "
            f"fp32 partials that an owner adds (at most {sk['max_partners']} each) before its epilogue."
        )
    if occ.blocks_per_sm > 1:
        most, least = cdiv(blocks, g.sms), blocks // g.sms  # blocks per SM when spread as evenly as possible
        if blocks <= wk.slots:
            resident = f"so all {blocks} blocks can be resident at once ({blocks} of {wk.slots} slots)"
        else:
            resident = (
                f"so {wk.slots} of the {blocks} blocks are resident at a time ({wk.waves:.2f} waves of "
                f"resident blocks, {wk.rounds} rounds)"
            )
        if most == least:
            load = f"every SM gets {most} block(s)"
        elif least == 0:
            load = f"{g.sms - blocks} SMs still get none"
        else:
            load = f"the uneven {most}-vs-{least} load per SM remains"
        s.say(
            f"This configuration fits {occ.blocks_per_sm} blocks per SM ({occ.limiter} limit), {resident}; "
            f"blocks on one SM share its Tensor Cores, and {load}."
        )
    return occ, w1


def _block(r: Report, p: _Gemm) -> None:
    k, e, bm, bn, block_k, threads, stages, trips = p.k, p.e, p.bm, p.bn, p.block_k, p.threads, p.stages, p.trips
    # 4. Block level: shared-memory tiles and the K loop.
    a_tile, b_tile, warps = bm * block_k * e, block_k * bn * e, p.warps
    s = r.step(
        "block",
        "Inside a block: shared-memory tiles and the K loop",
        threads=threads,
        warps=warps,
        a_tile_bytes=a_tile,
        b_tile_bytes=b_tile,
        k_steps=trips,
        smem_bytes=stages * (a_tile + b_tile),
        stages=stages,
    )
    s.say(f"{threads} threads = {warps} warps, all on one SM.")
    s.say(
        f"Per K step the block loads A[{bm}, {block_k}] = {fmt_kib(a_tile)} and B[{block_k}, {bn}] = "
        f"{fmt_kib(b_tile)} into shared memory; all {warps} warps read them from there."
    )
    s.say(f"K loop: {k} / {block_k} = {trips} steps; {stages} buffer(s) take {fmt_kib(stages * (a_tile + b_tile))}.")


def _mma(r: Report, p: _Gemm) -> None:
    dt, g, native, bm, bn, block_k, trips, blocks = p.dt, p.g, p.native, p.bm, p.bn, p.block_k, p.trips, p.blocks
    warps = p.warps
    mm, mn, mk = mma_shape(dt)
    # 5. Warps and MMA instructions.
    mma_flops = 2 * mm * mn * mk
    mmas_per_step = (bm // mm) * (bn // mn) * (block_k // mk)
    mmas_total = mmas_per_step * trips * blocks
    s = r.step(
        "mma",
        "Warps, fragments and Tensor-Core MMAs",
        mma_shape=list(MMA_SHAPE),
        flops_per_mma=mma_flops,
        mmas_per_k_step=mmas_per_step,
        mmas_per_warp_per_k_step=mmas_per_step / warps,
        mmas_total=mmas_total,
    )
    s.say(
        f"Each MMA is {mm}x{mn}x{mk}: 2 x {mm} x {mn} x {mk} = {mma_flops} FLOPs on {mm}x{mn} fragments held in "
        f"registers. A block issues ({bm}/{mm}) x ({bn}/{mn}) x ({block_k}/{mk}) = {mmas_per_step} MMAs per K step, "
        f"{mmas_per_step / warps:g} per warp; {mmas_total:,} in all."
    )
    s.values["native_instruction"] = native.to_dict()
    s.say(
        f"These are the warp-level (wmma) fragments{' (wmma has no fp8 shape: the count is per 32-byte K slice)' if dt == 'fp8' else ''}. "
        f"The {g.name}'s own instruction is {native.instruction}, issued by {native.issued_by}, accumulating in "
        f"{native.accumulator}."
    )


def _traffic(r: Report, p: _Gemm, nbytes: int) -> None:
    m, n, k, dtype, bm, bn = p.m, p.n, p.k, p.dtype, p.bm, p.bn
    gm, gn = p.grid
    # 6. HBM traffic: naive vs tiled.
    naive = traffic.gemm_naive_hbm_bytes(m, n, k, dtype)
    tiled = traffic.gemm_tiled_hbm_bytes(m, n, k, bm, bn, dtype)
    ts = min(bm, bn)
    s = r.step(
        "traffic",
        "HBM traffic: naive vs tiled",
        naive_bytes=naive,
        tiled_bytes=tiled,
        reduction=naive / tiled,
        a_reads=gn,
        b_reads=gm,
    )
    s.say(
        f"Naive (one thread per C element, no reuse): each A element is read {n} times and each B element {m} "
        f"times: {fmt_bytes(naive)}."
    )
    s.say(
        f"Tiled: A is read once per column of tiles ({gn} times), B once per row of tiles ({gm} time(s)): "
        f"{fmt_bytes(tiled)}, {naive / tiled:.0f}x less. With square TS x TS tiles the ratio is TS "
        f"(traffic drops to 1/TS); here the smaller side is {ts}. L2 can serve A's repeats, so HBM sees about {fmt_bytes(nbytes)}."
    )


def _roofline(r: Report, p: _Gemm, flops: int, nbytes: int) -> roofline.Roofline:
    m, n, k, dtype, g = p.m, p.n, p.k, p.dtype, p.g
    # 7. Arithmetic intensity and the roofline.
    rf = roofline.time(g, flops, nbytes, dtype)
    s = r.step(
        "roofline",
        "Arithmetic intensity against the balance point",
        intensity=rf.intensity,
        balance=rf.balance,
        bound=rf.bound,
        time_s=rf.time_s,
        compute_s=rf.compute_s,
        memory_s=rf.memory_s,
        peak_tflops=_gpus.peak_flops(g, dtype) / 1e12,
        hbm_tb_s=g.hbm_bytes_per_s / 1e12,
        tensor_utilisation=rf.compute_s / rf.time_s,
    )
    s.say(
        f"Intensity = {fmt_flops(flops)} / {fmt_bytes(nbytes)} = {rf.intensity:.1f} FLOP/B. Balance = "
        f"{_gpus.peak_flops(g, dtype) / 1e12:.1f} TFLOP/s / {g.hbm_bytes_per_s / 1e12:.2f} TB/s = {fmt_intensity(rf.balance)} FLOP/B."
    )
    s.say(
        f"{'Memory' if rf.bound == 'memory' else 'Compute'}-bound: compute takes {fmt_time(rf.compute_s)}, "
        f"moving the bytes {fmt_time(rf.memory_s)}; the floor is {fmt_time(rf.time_s)}, and the Tensor Cores can be "
        f"busy at most {pct(rf.compute_s / rf.time_s)} of it."
    )

    # The time model (tilewise.model.predict) beside the floor: the advisor's best config of the kernel.
    if _gpus.dtype_name(dtype) in ("bf16", "fp16"):
        problem = {"m": m, "n": n, "k": k, "dtype": _gpus.dtype_name(dtype)}
        prediction(s, "gemm", problem, g.key, what="tilewise's kernel at its best config", floor_s=rf.time_s)
    return rf


def _padding(r: Report, p: _Gemm) -> float:
    m, native = p.m, p.native
    # 8. Fragment padding when M is small.
    fill16 = decode.fragment_fill(m, 16)
    fill64 = decode.fragment_fill(m, 64)
    fill_native = decode.fragment_fill(m, native.m)
    s = r.step(
        "padding",
        "Fragment padding when M is small",
        m=m,
        fill_m16=fill16,
        fill_m64_wgmma=fill64,
        fill_native=fill_native,
        native_m=native.m,
        fill_m1=decode.fragment_fill(1, 16),
    )
    native_txt = "" if native.m == 16 else f" ({native.name}'s {native.m} rows on this GPU: {pct(fill_native)})"
    s.say(
        f"An MMA fragment has 16 rows; M = {m} fills {pct(fill16)} of them{native_txt}. "
        f"At M = 1 (decode, batch 1) only 1 of 16 rows carries data: {pct(decode.fragment_fill(1, 16))}."
    )
    return fill16


def _occupancy(r: Report, p: _Gemm, occ: Occupancy) -> None:
    # 9. Occupancy of the configuration.
    s = r.step("occupancy", "Occupancy of this configuration", **occ.to_dict())
    s.say(
        f"{p.threads} threads, {p.registers} registers per thread (assumed; pass --registers with what ptxas reports), "
        f"{fmt_kib(occ.smem_per_block)} of shared memory per block: {occ.blocks_per_sm} blocks per SM, "
        f"{occ.warps_per_sm} of {occ.max_warps_per_sm} warps ({pct(occ.occupancy)}), limited by {occ.limiter}."
    )


def _advice(r: Report, p: _Gemm, rf: roofline.Roofline, b_b: int, w1: waves.Waves, fill16: float) -> None:
    m, native, blocks, trips = p.m, p.native, p.blocks, p.trips
    # What would help, from the numbers.
    if rf.bound == "memory":
        r.advice.extend(_memory_bound_advice(p, rf, b_b))
    else:
        feed = {
            "hopper": "feed wgmma from TMA-loaded shared memory with 128x128+ tiles, 3-4 stages",
            "blackwell": "issue tcgen05 from one thread with 128-row tiles accumulating in Tensor Memory, TMA stages",
            "ampere": "feed mma.sync through ldmatrix with 128x128 tiles and 3-4 cp.async stages",
        }[native.family]
        r.advice.append(f"Compute-bound: {feed}, and a persistent grid.")
    if w1.tail_blocks and w1.efficiency < 0.9:
        fix = (
            f"split K (e.g. 2-way -> {2 * blocks} work units) or stream-K, or pick a tile giving a whole number of waves"
            if trips > 1
            else "the K loop is one step, so splitting K cannot help: pick a smaller tile or one giving a whole "
            "number of waves"
        )
        r.advice.append(
            f"The tail wave ({w1.tail_blocks} of {w1.slots} slots) wastes {pct(1 - w1.efficiency)} of SM-rounds: {fix}."
        )
    if fill16 < 1:
        r.advice.append(
            f"M = {m} pads MMA fragments to {pct(fill16)} useful rows: batch requests (continuous batching)."
        )
    if trips < 8:
        r.advice.append(
            f"The K loop is only {trips} steps: prologue and epilogue are a large share; consider a persistent kernel."
        )


def _memory_bound_advice(p: _Gemm, rf: roofline.Roofline, b_b: int) -> list[str]:
    """The memory-bound GEMM's two lines: batch rows to raise the intensity with M, and stream B at full bandwidth."""
    m, n, k, dt, g, trips = p.m, p.n, p.k, p.dt, p.g, p.trips
    need_m = decode.batch_for_compute_bound(k, n, dt, g)  # the same function `explain decode` uses
    need = (
        f"compute-bound from M = {need_m}"
        if need_m is not None
        else "no M reaches the balance (the intensity of this K and N saturates below it)"
    )
    full_m = cdiv(m, 16) * 16  # the smallest M >= m whose fragments are all full
    i_full = traffic.gemm_flops(full_m, n, k) / traffic.gemm_bytes(full_m, n, k, dt)
    if i_full < rf.balance:
        frag = (
            f"M = {m} fills every 16-row fragment yet gives only {fmt_intensity(i_full)} FLOP/B"
            if full_m == m
            else f"Filling the fragments (M = {full_m}) would give only {fmt_intensity(i_full)} FLOP/B"
        )
        frag += f", still below {rf.balance:.0f}: full fragments are not the same as full Tensor Cores."
    else:
        frag = ""
    spread = "enough blocks or split-K" if trips > 1 else "enough blocks (smaller tiles)"
    return [
        f"Memory-bound ({fmt_intensity(rf.intensity)} FLOP/B against {rf.balance:.0f}): the floor is reading "
        f"B ({fmt_bytes(b_b)}) once. Batching more rows raises intensity with M; {need}. {frag}".rstrip(),
        "Since time is bytes / bandwidth, the goal is HBM bandwidth: wide (16-byte) loads, deep pipelining "
        f"(3-4 stages) and {spread} to keep every SM streaming B.",
    ]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--m", type=cli_int, default=DEFAULTS["m"], help="rows of A and C (default 64)")
    p.add_argument("--n", type=cli_int, default=DEFAULTS["n"], help="columns of B and C (default 24576)")
    p.add_argument("--k", type=cli_int, default=DEFAULTS["k"], help="inner dimension (default 8192)")
    p.add_argument("--dtype", default="bf16", help="bf16, fp16, tf32 or fp8 (default bf16)")
    p.add_argument(
        "--gpu", default=_gpus.DEFAULT_GPU, help=f"registry name, see `tilewise gpus` (default {_gpus.DEFAULT_GPU})"
    )
    p.add_argument("--tile", default="64x128", help="output tile MxN per block (default 64x128)")
    p.add_argument("--block-k", type=cli_int, default=16, help="K step per iteration (default 16)")
    p.add_argument("--threads", type=cli_int, default=256, help="threads per block (default 256)")
    p.add_argument("--stages", type=cli_int, default=2, help="shared-memory buffers (default 2)")
    p.add_argument("--registers", type=cli_int, default=128, help="registers per thread, for occupancy (default 128)")


def from_args(a: argparse.Namespace) -> Report:
    return explain(
        m=a.m,
        n=a.n,
        k=a.k,
        dtype=a.dtype,
        gpu=a.gpu,
        tile=a.tile,
        block_k=a.block_k,
        threads=a.threads,
        stages=a.stages,
        registers=a.registers,
    )


__all__ = ["DEFAULTS", "add_arguments", "explain", "from_args", "parse_size", "parse_tile"]
