"""What one kernel configuration holds on chip, and its name: the arithmetic of a tile config.

Pure Python (no torch, no triton). The time model (`model.predict`, `model.compose`) and the advisor's
knob spaces (`tilewise.advise.space`) both need it, so it lives here, below both:

* shared memory of one program: triton 3.6 gives the pointer GEMM `stages` A+B tile buffers when
  BLOCK_M >= 64 (the wgmma path) and `stages - 1` below (mma.sync with a cp.async ring): exactly what it
  reserved compiling every config of the GEMM grid for sm_90 (advise/sm90_gemm_compiled.json, checked by
  tests/test_advise.py);
  the persistent TMA kernel keeps `stages` tiles plus the epilogue's staging half tile (block_n >= 128);
  attention keeps the Q tile and `stages` K and V tiles; decode `stages` K and V tiles; the grouped GEMM
  `stages` A+B tiles;
* registers: the fp32 accumulator is block_m x block_n / threads registers per thread; more than
  MAX_ACC_REGS (160 of the 255) leaves too few for addresses and operands (128 x 256 with 4 warps is
  256 per thread: spills);
* tags: each kernel's own spelling of a config (`kernels.gemm.Config.tag()` and the like), the key of
  the calibration's per-config rates and of the sweep's rows;
* the grouped GEMM's configurations (`grouped_space`): the composites of the time model (moe, ffn) take
  the fastest predicted of them when the caller names none, and the advisor ranks the same list.
"""

from __future__ import annotations

from typing import Any

from tilewise import gpus as _gpus

MAX_ACC_REGS = 160  # fp32 accumulator registers per thread that leave room for addresses and operands

# ---------------------------------------------------------------------------------------------- GEMM


def gemm_tag(c: dict[str, Any]) -> str:
    """The kernel's own `Config.tag()` spelling (pws/p/sb prefix, tile, group, split, warps, stages)."""
    p = ("pws" if c["warp_specialize"] else "p") if c["persistent"] else ("sb" if c["stream_b"] else "")
    return (
        f"{p}{c['block_m']}x{c['block_n']}x{c['block_k']}_g{c['group_m']}_s{c['split_k']}"
        f"_w{c['num_warps']}_st{c['num_stages']}"
    )


def gemm_smem_bytes(c: dict[str, Any], e: int) -> int:
    """Shared memory of one GEMM program with `e`-byte operands (see the module doc)."""
    tile: int = (c["block_m"] * c["block_k"] + c["block_k"] * c["block_n"]) * e
    if c["persistent"]:
        epi: int = c["block_m"] * (c["block_n"] // 2 if c["block_n"] >= 128 else c["block_n"]) * e
        return int(c["num_stages"] * tile + epi)
    return int((c["num_stages"] if c["block_m"] >= 64 else max(1, c["num_stages"] - 1)) * tile)


def row_load_bytes(pitch_bytes: int) -> int:
    """Bytes one lane loads at a time from rows of this pitch: its largest power-of-two divisor, up to 16 (the
    kernel passes each stride divided by that power, so the compiler knows it; kernels.gemm)."""
    w = 1
    while w < 16 and pitch_bytes % (2 * w) == 0:
        w *= 2
    return w


def gemm_acc_regs(c: dict[str, Any]) -> float:
    """fp32 accumulator registers per thread of a GEMM tile."""
    return float(c["block_m"] * c["block_n"] / (32 * c["num_warps"]))


# ---------------------------------------------------------------------------------------------- Gluon GEMM

_GLUON_PREFIX = {"cooperative": "gco", "pingpong": "gpp", "single": "gsg"}


def gemm_gluon_tag(c: dict[str, Any]) -> str:
    """The Gluon GEMM's own `GluonGemmConfig.tag()` spelling: g{co|pp|sg}BMxBNxBK_gG_stS, `_eP` for an epilogue
    through 1/P of the C tile at a time, `_sk` for stream-K."""
    parts = int(c.get("epilogue_parts", 1))
    return (
        f"{_GLUON_PREFIX[c['schedule']]}{c['block_m']}x{c['block_n']}x{c['block_k']}"
        f"_g{c.get('group_m', 8)}_st{c['num_stages']}{f'_e{parts}' if parts > 1 else ''}"
        f"{'_sk' if c.get('stream_k') else ''}"
    )


def gemm_gluon_consumers(c: dict[str, Any]) -> int:
    """Consumer warpgroups of one Gluon GEMM CTA: single 1, pingpong 2, cooperative 2, or 3 when block_m is a
    multiple of 3 (192 rows = three 64-row warpgroups: 25% less work per tile than 128 x 256, which fills the
    waves of shapes whose 128 x 256 tiles leave SMs idle, e.g. 2000 x 3000: 264 tiles = 2 full waves)."""
    if c["schedule"] == "single":
        return 1
    return 3 if c["schedule"] == "cooperative" and c["block_m"] % 3 == 0 else 2


def gemm_gluon_sub_m(c: dict[str, Any]) -> int:
    """Rows of one consumer's accumulator: the CTA tile's rows shared by the cooperative consumers, else all."""
    return int(c["block_m"]) // gemm_gluon_consumers(c) if c["schedule"] == "cooperative" else int(c["block_m"])


def gemm_gluon_smem_bytes(c: dict[str, Any], e: int = 2) -> int:
    """Shared memory of one CTA of the Gluon GEMM: the ring (A and B tiles per stage), one C tile per consumer
    (the epilogue's TMA-store buffer; 1/epilogue_parts of it where the epilogue stores the tile in parts),
    16 bytes of barriers per stage. sm_90a builds (triton 3.6) of
    cooperative 128x256 st3, pingpong 128x128 st4 and single 64x128 st4 reserved 160, 184 and 116 B more
    (the compiler's scratch; the fit rule keeps 1 KB)."""
    consumers = gemm_gluon_consumers(c)
    sub_m = gemm_gluon_sub_m(c)
    a_rows = c["block_m"] if c["schedule"] == "cooperative" else sub_m
    ring = c["num_stages"] * (a_rows + c["block_n"]) * c["block_k"]
    c_tile = sub_m * c["block_n"] // int(c.get("epilogue_parts", 1))
    return int((ring + consumers * c_tile) * e + 16 * c["num_stages"])


# ---------------------------------------------------------------------------------------------- attention


def attention_smem_bytes(block_m: int, block_n: int, head_dim: int, stages: int, e: int) -> int:
    """Shared memory of one attention program: the Q tile and `stages` K and V tiles."""
    return (block_m * head_dim + stages * 2 * block_n * head_dim) * e


def attention_tag(c: dict[str, Any]) -> str:
    return f"{c['block_m']}x{c['block_n']}_w{c['num_warps']}_st{c['num_stages']}"


# ---------------------------------------------------------------------------------------------- decode


def decode_smem_bytes(block_n: int, head_dim: int, stages: int, e: int) -> int:
    """The kernel's shared-memory budget for one decode program's tile (kernels.decode.DECODE_SMEM bounds it):
    `stages` K and V tiles of `block_n` keys."""
    return 2 * block_n * head_dim * e * stages


def decode_smem_compiled(block_n: int, head_dim: int, stages: int, e: int) -> int:
    """Shared memory one decode program takes as Triton 3.6 compiles it for sm_90, which sets its programs per
    SM: `stages - 1` K and V buffers (the tile in use is read from one of them) and one 16-row tile of the
    query and of the probabilities for their layout changes. Compiled (tests/data/tuning/kernel_resources_sm90.json):
    D128 bf16 128-key tiles at 3 stages 139,264 B = 2 x 65,536 + 16 x 256 x 2; D64 bf16 128 keys 71,680;
    D256 bf16 64 keys 141,312, all as this formula gives (and not 2 x `decode_smem_bytes`' 3 stages)."""
    return 2 * block_n * head_dim * e * max(1, stages - 1) + 16 * (block_n + head_dim) * e


def decode_registers(block_n: int, head_dim: int, warps: int, e: int) -> int:
    """Registers per thread of one decode program as Triton 3.6 compiles it for sm_90: 64 and the thread's share
    of a K and a V tile in 32-bit registers (2 x block_n x head_dim x e / (4 x 32 x warps)), at most 255. Compiled
    (ptxas through cuobjdump, bf16, GQA 4): D128 64-key tiles on 4 warps 128 (the formula 128), 32-key 96 (96),
    128-key 183-255 (192); D64 128-key 128 (128); D256 64-key 184-186 (192), 32-key 128 (128); 8 warps halve the
    share (D128 128-key tiles 128). With 65,536 registers per SM they, more than shared memory, cap the programs
    per SM: D128 64-key tiles 4 at 2 stages and 3 at 3, 128-key tiles 2."""
    return min(255, 64 + 2 * block_n * head_dim * e // (4 * 32 * warps))


def decode_tag(c: dict[str, Any]) -> str:
    return f"n{c['block_n']}_w{c['num_warps']}_st{c['num_stages']}_s{c['num_splits']}"


# ---------------------------------------------------------------------------------------------- grouped

GROUPED_TILES = (
    (16, 128, 128),
    (32, 128, 128),
    (64, 128, 64),
    (64, 256, 64),
    (128, 128, 64),
    (128, 256, 64),
)
GROUPED_STAGES = (3, 4)
GROUPED_SCHEDULES = ("map", "search")


def grouped_smem_bytes(block_m: int, block_n: int, block_k: int, stages: int, e: int) -> int:
    """Shared memory of one grouped-GEMM program: `stages` A+B tiles."""
    return stages * (block_m * block_k + block_k * block_n) * e


def grouped_space(
    rows_per_expert: float, n: int, k: int, dtype: str = "bf16", gpu: str | _gpus.GPU = _gpus.DEFAULT_GPU
) -> list[dict[str, Any]]:
    """The grouped GEMM's configurations that fit the GPU: GROUPED_TILES x GROUPED_STAGES x GROUPED_SCHEDULES,
    4 warps up to 32 rows and 8 above, within the per-block shared memory and MAX_ACC_REGS."""
    g = _gpus.get(gpu)
    e = _gpus.element_bytes(dtype)
    limit = g.smem_per_block_optin - g.reserved_smem_per_block
    out = []
    for bm, bn, bk in GROUPED_TILES:
        w = 4 if bm <= 32 else 8
        for st in GROUPED_STAGES:
            if grouped_smem_bytes(bm, bn, bk, st, e) > limit or bm * bn / (32 * w) > MAX_ACC_REGS:
                continue
            for sched in GROUPED_SCHEDULES:
                out.append(
                    {
                        "block_m": bm,
                        "block_n": bn,
                        "block_k": bk,
                        "num_warps": w,
                        "num_stages": st,
                        "schedule": sched,
                        "flatten": True,
                        "tma": bool(g.tma and e == 2),
                    }
                )
    return out


def grouped_tag(c: dict[str, Any]) -> str:
    return (
        f"m{c['block_m']}n{c['block_n']}k{c['block_k']}w{c['num_warps']}s{c['num_stages']}-{c.get('schedule', 'map')}"
    )


TAGS = {
    "gemm": gemm_tag,
    "gemm_gluon": gemm_gluon_tag,
    "attention": attention_tag,
    "decode": decode_tag,
    "grouped": grouped_tag,
}

__all__ = [
    "GROUPED_SCHEDULES",
    "GROUPED_STAGES",
    "GROUPED_TILES",
    "MAX_ACC_REGS",
    "TAGS",
    "attention_smem_bytes",
    "attention_tag",
    "decode_registers",
    "decode_smem_bytes",
    "decode_smem_compiled",
    "decode_tag",
    "gemm_acc_regs",
    "gemm_gluon_consumers",
    "gemm_gluon_smem_bytes",
    "gemm_gluon_sub_m",
    "gemm_gluon_tag",
    "gemm_smem_bytes",
    "gemm_tag",
    "grouped_smem_bytes",
    "grouped_space",
    "grouped_tag",
    "row_load_bytes",
]
