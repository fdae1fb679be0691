"""Ground truth for `tilewise.sim.analyze_access`: Nsight Compute's own counts on an H200.

Each access pattern is one warp (one block of 32 threads) doing exactly one memory instruction:
lane i reads (or writes) `width` bytes at byte offset offs[i] of a global buffer or of a shared array,
if bit i of the mask is set. The offsets and the mask come from __constant__ memory (LDC, not a
global load), the instruction is inline PTX (`ld.global.u32`, `st.shared.v4.u32`, ...) so that the
compiler neither merges nor drops it, and nothing else in the kernel touches global or shared memory.
So the l1tex counters of one launch are the counters of that one instruction.

    python3 tests/data/ncu/make_fixture.py gen                  # patterns.txt + twins.cu (CPU)
    python3 tests/data/ncu/make_fixture.py build                # + nvcc -> twins (CPU, compile check)
    python3 tests/data/ncu/make_fixture.py all --out DIR        # gen + build + ncu (device) -> DIR/ncu_access.json

The fixtures `ncu_access_roundN.json` beside this script are what `all --round N` wrote on the H200
(run there as `all --round N --out DIR`, then copied here). Each record:
space, op, width, mask, offsets (bytes from a 256-byte aligned global buffer or from the start of
the shared window) and the metrics, as ncu printed them.

Round 5 is atomics only (`all --round 5`): op "atom" (atom.{global,shared}.add.u32 / .u64,
old value returned and stored), "red" (red.add.u32 / .u64, nothing returned), and 4-byte side kinds:
"atomu" (atom.add.u32 whose result is unused: ptxas may make it a RED), "atomf" / "redf" (add.f32),
"cas" (atom.cas.b32). Its metric list is probed name by name (`probe_metrics`); the fixture records
which names this ncu did not know ("metrics_dropped").
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WIDTHS = (1, 2, 4, 8, 16)
SPACES = ("global", "shared")
OPS = ("ld", "st")  # rounds 1-4
# Round 5: atomics. Codes in patterns.txt continue after ld = 0, st = 1 (OP_CODES.index).
ATOMIC_OPS = ("atom", "red", "atomu", "atomf", "redf", "cas", "max", "exch")
OP_CODES = OPS + ATOMIC_OPS
FULL = 0xFFFFFFFF
SMEM_BYTES = 16384  # shared array size; every shared offset stays below this
GMEM_BYTES = 1 << 20  # global buffer size

METRICS_CORE = [
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
]
# Extra counters that help explain a surprise; dropped if this ncu does not know one of them.
METRICS_EXTRA = [
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
]

# Round 5 (atomics): the counters of atom / red, always asked for (each name is in this ncu's --query-metrics
# list on the H200, Nsight Compute 2025.3.1) ...
METRICS_ATOMIC_CORE = [
    "l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",  # the store of an atom's returned value
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    # shared 64-bit and f32 adds are a loop of LDS + ATOMS.CAST on sm_90 (no native ATOMS.ADD.64 / .F32)
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",  # these two counted in rounds 1-4
    "smsp__sass_inst_executed_op_global_st.sum",
]
# ... and extras, probed one by one (probe_metrics); the unknown ones are dropped and recorded.
METRICS_ATOMIC_EXTRA = [
    "smsp__sass_inst_executed_op_shared_atom.sum",
    "smsp__sass_inst_executed_op_global_atom.sum",
    "smsp__sass_inst_executed_op_global_red.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "lts__t_sectors_op_atom.sum",  # L2's side of a global atom / red
    "lts__t_sectors_op_red.sum",
]

# ----------------------------------------------------------------------------- patterns


def _pat(space, op, width, offs, mask=FULL, name=""):
    assert len(offs) == 32
    assert all(o % width == 0 and o >= 0 for o in offs), (name, offs)
    limit = SMEM_BYTES if space == "shared" else GMEM_BYTES
    assert all(o + width <= limit for o in offs), name
    return {"space": space, "op": op, "width": width, "mask": mask & FULL, "offsets": list(offs), "name": name}


def _random_mask(rng, density):
    m = 0
    for i in range(32):
        if rng.random() < density:
            m |= 1 << i
    return m or (1 << rng.randrange(32))


def patterns(round_no: int = 1) -> list[dict]:
    """The access patterns of one round, deterministic (seeded).

    Round 1: a survey (every space, op and width; strides, broadcasts, multicasts, half and quarter
    warps on the same banks, masks, random windows). Round 2: probes of what round 1 found surprising,
    the 8- and 16-byte shared loads (when two half- or quarter-warps share a wavefront, and what the
    bank-conflict counter counts then), plus many random patterns of every kind. Round 3: two-lane probes.
    Round 4: a test of the rule fitted to rounds 1-3 on patterns it had not seen (lane i paired with lane
    i ^ x, one broken pair at every lane, halves paired differently, random per-quad colourings and masks).
    Round 5: atomics (see `_round5`).
    """
    if round_no == 5:
        return _interleave(_round5())
    if round_no == 2:
        return _interleave(_round2())
    if round_no == 3:
        return _interleave(_round3())
    if round_no == 4:
        return _interleave(_round4())
    rng = random.Random(20261130 + round_no)
    out: list[dict] = []
    L = range(32)
    for space in SPACES:
        for op in OPS:
            for w in WIDTHS:
                P = lambda offs, mask=FULL, name="": out.append(_pat(space, op, w, offs, mask, f"{name}"))  # noqa: E731
                P([i * w for i in L], name="contiguous")
                P([64 + i * w for i in L], name="contiguous+64")
                P([32 + i * w for i in L] if w <= 16 else [i * w for i in L], name="contiguous+32")
                P([(31 - i) * w for i in L], name="reversed")
                P([0] * 32, name="broadcast")
                P([(i // 2) * w for i in L], name="pairs")
                P([(i // 8) * w for i in L], name="groups8")
                P([i * 2 * w for i in L], name="stride2")
                P([i * 128 for i in L], name="stride128B")
                if space == "global":
                    P([i * 32 for i in L], name="stride32B")
                    P([i * 4096 for i in L], name="stride4096B")
                    P([(i % 8) * w + (i // 8) * 4096 for i in L], name="4rows_of_8")
                else:
                    P([i * 4 * w for i in L], name="stride4")
                    P([i * 132 // w * w for i in L], name="stride132B")
                    P([(i % 2) * 128 + (i // 2) * w for i in L], name="interleave_rows2")
                    P([(i % 4) * 256 + (i // 4) * w for i in L], name="interleave_rows4")
                    # lanes 0-15 and 16-31 hit the same banks in different rows
                    P([(i % 16) * w + (i // 16) * 512 for i in L], name="halves_same_banks")
                    # within each quarter warp: 4 lanes x 16 B = one bank group; quarters collide
                    P([(i % 8) * w + (i // 8) * 1024 for i in L], name="quarters_same_banks")
                    P([(i % 8) * w for i in L], name="multicast_quarters")
                    P([((i * 5) % 32) * w for i in L], name="perm_stride5")
                    P([(i ^ 1) * w for i in L], name="swap_pairs")
                    P([(i // 2) * 2 * w + (i % 2) * 256 for i in L], name="pairs_two_rows")
                P([i * w for i in L], mask=0x0000FFFF, name="contiguous_lowhalf")
                P([i * w for i in L], mask=0xFFFF0000, name="contiguous_highhalf")
                P([i * w for i in L], mask=0x55555555, name="contiguous_even")
                P([i * w for i in L], mask=0x00000001, name="single_lane")
                P([i * 128 for i in L], mask=0x000000FF, name="stride128B_8lanes")
                for k in range(4):
                    window = [128, 512, 2048, 8192][k]
                    offs = [rng.randrange(0, window // w) * w for _ in L]
                    P(offs, mask=_random_mask(rng, rng.choice([0.3, 0.6, 1.0, 1.0])), name=f"random_{window}B")
                # random masks on a contiguous row and on a broadcast
                P([i * w for i in L], mask=_random_mask(rng, 0.5), name="contiguous_randmask")
                P([0] * 32, mask=_random_mask(rng, 0.5), name="broadcast_randmask")
    return _interleave(out)


def _interleave(out: list[dict]) -> list[dict]:
    """Interleave the (space, op, width) groups so that every ncu chunk covers all of them; number them."""
    groups: dict[tuple, list[dict]] = {}
    for p in out:
        groups.setdefault((p["space"], p["op"], p["width"]), []).append(p)
    order = []
    for k in range(max(len(g) for g in groups.values())):
        order += [g[k] for g in groups.values() if k < len(g)]
    for i, p in enumerate(order):
        p["id"] = i
    return order


def _round2() -> list[dict]:
    rng = random.Random(20261202)
    out: list[dict] = []
    L = range(32)

    def P(space, op, w, offs, mask, name):
        out.append(_pat(space, op, w, offs, mask, name))

    # 1. two active lanes: same phase or neighbouring phases, and how their addresses relate
    for op in OPS:
        for w in (8, 16):
            ph = 128 // w  # lanes per phase
            for lanes, lname in (((0, ph), "phase0+phase1"), ((0, 1), "same_phase"), ((0, 2 * ph), "pair0+pair1")):
                if lanes[1] >= 32:
                    continue
                for rel, (a, b) in {
                    "same_addr": (0, 0),
                    "same_row_next_banks": (0, w),
                    "same_row_far_banks": (0, 64),
                    "next_row_same_banks": (0, 128),
                    "next_row_other_banks": (0, 128 + 64),
                    "far_row_same_banks": (0, 4096),
                    "same_word_pair_other_row": (64, 64 + 1024),
                }.items():
                    offs = [0] * 32
                    offs[lanes[0]], offs[lanes[1]] = a, b
                    P("shared", op, w, offs, (1 << lanes[0]) | (1 << lanes[1]), f"two_lanes_{lname}_{rel}")
    # 2. partial masks over regular addresses (round 1: 0x55555555 on contiguous counted a conflict)
    masks = [0x55555555, 0xAAAAAAAA, 0x33333333, 0x0F0F0F0F, 0x00FF00FF, 0x11111111, 0x01010101, 0x0000FF0F]
    for op in OPS:
        for w in (8, 16):
            for mask in masks:
                act = [i for i in L if mask >> i & 1]
                packed = [0] * 32
                for k, i in enumerate(act):
                    packed[i] = k * w
                P("shared", op, w, [i * w for i in L], mask, "contiguous_mask")
                P("shared", op, w, packed, mask, "packed_mask")
                P("shared", op, w, [(i * w) % 128 for i in L], mask, "one_row_mask")

    # 3. random patterns: many 8/16-byte shared loads, some of everything else
    def rand(space, op, w, n):
        for _ in range(n):
            window = rng.choice([64, 128, 256, 512, 1024, 4096])
            window = max(window, w)
            offs = [rng.randrange(0, window // w) * w for _ in L]
            if rng.random() < 0.3:  # rows of a matrix: row-major chunks
                stride = rng.choice([128, 132, 136, 144, 256, 264])
                cols = rng.choice([2, 4, 8, 16])
                offs = [((i // cols) * stride + (i % cols) * w) // w * w for i in L]
            mask = FULL if rng.random() < 0.35 else _random_mask(rng, rng.choice([0.2, 0.4, 0.6, 0.8]))
            P(space, op, w, offs, mask, f"random_{window}B")

    rand("shared", "ld", 8, 110)
    rand("shared", "ld", 16, 110)
    rand("shared", "st", 8, 30)
    rand("shared", "st", 16, 30)
    for w in (1, 2, 4):
        for op in OPS:
            rand("shared", op, w, 12)
    for w in WIDTHS:
        for op in OPS:
            rand("global", op, w, 5)
    return out


def _round3() -> list[dict]:
    """Two active lanes, one in each phase of a pair, at every pair of lane positions: does the position matter?"""
    out: list[dict] = []
    for w, positions in ((16, range(8)), (8, (0, 1, 2, 3, 5, 8, 13, 15))):
        ph = 128 // w
        cols = 128 // w
        for p in positions:
            for q in positions:
                for rel, row_b in (("other_row", 3), ("same_row", 0)):
                    if rel == "same_row" and w == 8:
                        continue
                    offs = [0] * 32
                    offs[p] = p % cols * w
                    offs[ph + q] = row_b * 128 + (p + cols // 2) % cols * w  # banks disjoint from lane p's
                    out.append(_pat("shared", "ld", w, offs, (1 << p) | (1 << (ph + q)), f"two_lanes_pos{p}_{q}_{rel}"))
    return out


def _round4() -> list[dict]:
    """Out-of-sample check of the 8/16-byte shared-load rule found in rounds 1-3.

    The rule: the two phases of a pair go through as one when every active lane i asks for the address of
    lane i ^ 1 (where that lane is active), or every active lane i for the address of lane i ^ 2.
    These patterns sit on both sides of that line: pairings by other partners (i ^ 3, i ^ 4, i ^ 8, i ^ 16),
    one broken pair at each lane position, halves or quarters paired differently, masks that hide the
    broken lanes, and random per-quad colourings. Stores and other widths get a smaller share.
    """
    rng = random.Random(20261204)
    out: list[dict] = []
    L = range(32)

    def P(op, w, offs, mask, name, space="shared"):
        out.append(_pat(space, op, w, offs, mask, name))

    def items(w, n, layout):
        """n distinct w-byte addresses: packed in rows, scattered over rows on the same banks, or random."""
        if layout == "packed":
            return [k * w for k in range(n)]
        if layout == "same_banks":  # every item in its own row, banks cycling slowly -> conflicts
            return [k * 128 + (k % 2) * w for k in range(n)]
        pool = rng.sample(range(SMEM_BYTES // w // 4), n)
        return [x * w for x in pool]

    def paired(w, x, layout):
        """lane i and lane i ^ x share an item; 16 items for the 16 pairs"""
        reps = sorted({min(i, i ^ x) for i in L})
        it = items(w, len(reps), layout)
        where = {r: it[k] for k, r in enumerate(reps)}
        return [where[min(i, i ^ x)] for i in L]

    for w in (8, 16):
        for op in ("ld", "st"):
            xs = (1, 2, 3, 4, 8, 16) if op == "ld" else (1, 2, 4)
            for x in xs:
                for layout in ("packed", "same_banks", "random"):
                    offs = paired(w, x, layout)
                    masks = [FULL, _random_mask(rng, 0.7)] if op == "ld" else [FULL]
                    for mask in masks:
                        P(op, w, offs, mask, f"paired_xor{x}_{layout}")
        # both pairings at once: every quad asks for one address
        for layout in ("packed", "same_banks", "random"):
            it = items(w, 8, layout)
            offs = [it[i // 4] for i in L]
            for mask in (FULL, _random_mask(rng, 0.5), _random_mask(rng, 0.3)):
                P("ld", w, offs, mask, f"quads_{layout}")
        # one broken pair, at every lane: the rest paired by i ^ 1 or by i ^ 2
        for x in (1, 2):
            for layout in ("packed", "same_banks"):
                base = paired(w, x, layout)
                for lane in L:
                    offs = list(base)
                    offs[lane] = (max(base) // 128 + 2 + lane % 4) * 128 + (lane % (128 // w)) * w
                    P("ld", w, offs, FULL, f"broken_xor{x}_{layout}_lane{lane}")
                    # the same, with the broken lane's partner switched off: paired again
                    P("ld", w, offs, FULL & ~(1 << (lane ^ x)), f"broken_xor{x}_{layout}_lane{lane}_partner_off")
        # halves (or quarters) paired differently: each part alone would merge, the warp does not
        for parts in (2, 4):
            for order in ((1, 2), (2, 1)):
                a, b = paired(w, order[0], "packed"), paired(w, order[1], "packed")
                size = 32 // parts
                offs = [(a if (i // size) % 2 == 0 else b)[i] + (i // size) * 256 for i in L]
                P("ld", w, offs, FULL, f"parts{parts}_xor{order[0]}_then_xor{order[1]}")
                P("ld", w, offs, _random_mask(rng, 0.6), f"parts{parts}_xor{order[0]}_then_xor{order[1]}_randmask")
        # random per-quad colourings: each quad asks for 1-2 addresses, placed by one of the 8 colourings
        colourings = [
            (0, 0, 0, 0),
            (0, 0, 0, 1),
            (0, 0, 1, 0),
            (0, 0, 1, 1),
            (0, 1, 0, 0),
            (0, 1, 0, 1),
            (0, 1, 1, 0),
            (0, 1, 1, 1),
        ]
        for _ in range(300):
            window = rng.choice([128, 256, 512, 1024, 4096])
            one = rng.random() < 0.5  # one colouring for the whole warp, or one per quad
            c0 = rng.choice(colourings)
            offs = []
            for q in range(8):
                c = c0 if one else rng.choice(colourings)
                pair = [rng.randrange(window // w) * w for _ in range(2)]
                offs += [pair[c[i]] for i in range(4)]
            mask = FULL if rng.random() < 0.4 else _random_mask(rng, rng.choice([0.3, 0.5, 0.7, 0.9]))
            P("ld", w, offs, mask, f"colour_{'warp' if one else 'quad'}_{window}B")
        # random: lanes pick from a few addresses (many accidental pairings)
        for _ in range(60):
            pool = [rng.randrange(512 // w) * w for _ in range(rng.choice([1, 2, 3, 4, 8]))]
            offs = [rng.choice(pool) for _ in L]
            mask = FULL if rng.random() < 0.3 else _random_mask(rng, rng.choice([0.2, 0.5, 0.8]))
            P("ld", w, offs, mask, f"pool{len(pool)}")
    # a share of everything else, to keep the other rules honest on new data
    for space in SPACES:
        for op in OPS:
            for w in WIDTHS:
                for _ in range(6):
                    window = rng.choice([64, 256, 1024, 4096])
                    window = max(window, w)
                    offs = [rng.randrange(window // w) * w for _ in L]
                    mask = FULL if rng.random() < 0.4 else _random_mask(rng, rng.choice([0.3, 0.6, 0.9]))
                    P(op, w, offs, mask, f"random_{window}B", space=space)
    return out


# (space, op, width) of round 5: the main kinds get the full list of patterns, the side kinds a short one.
ATOMIC_MAIN = [(sp, op, w) for sp in SPACES for op in ("atom", "red") for w in (4, 8)]
ATOMIC_SIDE = [(sp, op, 4) for sp in SPACES for op in ("atomu", "atomf", "redf", "cas", "max", "exch")]


def _round5() -> list[dict]:
    """Atomics, one warp, one atom / red instruction: how the store rule's counts change.

    Same-address lanes are the point (a store needs one write, an atomic applies every lane's update):
    all lanes on one address, 2/4/8/16 lanes per address (neighbours, or spread over the warp), in one bank
    (stride 128 B) or spread; distinct words (contiguous, strided, permuted); masks; random windows and
    random small pools of addresses. Global kinds add sector strides (32 B, 4 KB).
    """
    rng = random.Random(20261205)
    out: list[dict] = []
    L = range(32)
    for space, op, w in ATOMIC_MAIN + ATOMIC_SIDE:
        main = (space, op, w) in ATOMIC_MAIN
        pats: list[tuple] = []

        def P(offs, mask=FULL, name="", side=False):
            if main or side:
                pats.append((offs, mask, name))

        P([0] * 32, name="broadcast", side=True)
        P([64] * 32, name="broadcast+64")
        P([0] * 32, mask=_random_mask(rng, 0.5), name="broadcast_randmask")
        P([0] * 32, mask=0x80000001, name="broadcast_2lanes")
        P([i * w for i in L], name="contiguous", side=True)
        P([64 + i * w for i in L], name="contiguous+64")
        P([32 + i * w for i in L], name="contiguous+32")
        P([(31 - i) * w for i in L], name="reversed")
        for k in (2, 4, 8, 16):
            side = k == 4
            P([(i // k) * w for i in L], name=f"lanes{k}_per_addr", side=side)  # neighbours share
            P([(i % (32 // k)) * w for i in L], name=f"lanes{k}_per_addr_spread", side=side)  # i, i + 32/k, ...
            P([(i // k) * 128 for i in L], name=f"lanes{k}_per_addr_same_bank", side=side)
        P([i * 2 * w for i in L], name="stride2")
        P([i * 128 for i in L], name="stride128B", side=True)
        P([i * 128 for i in L], mask=0x000000FF, name="stride128B_8lanes")
        P([i * 32 for i in L], name="stride32B", side=True)
        if space == "global":
            P([i * 4096 for i in L], name="stride4096B")
        else:
            P([i * 512 for i in L], name="stride512B")
        P([(i ^ 1) * w for i in L], name="swap_pairs", side=True)
        P([((i * 5) % 32) * w for i in L], name="perm_stride5")
        P([(i % 2) * 128 for i in L], name="two_words_same_bank")
        P([(i % 2) * 64 for i in L], name="two_words_other_banks")
        P([(i % 16) * w + (i // 16) * 512 for i in L], name="halves_same_banks")
        P([i * w for i in L], mask=0x0000FFFF, name="contiguous_lowhalf")
        P([i * w for i in L], mask=0xFFFF0000, name="contiguous_highhalf")
        P([i * w for i in L], mask=0x55555555, name="contiguous_even", side=True)
        P([i * w for i in L], mask=0x00000001, name="single_lane", side=True)
        P([i * w for i in L], mask=0x80000000, name="single_lane31")
        for k in range(6 if main else 3):
            window = max(w, [32, 128, 256, 1024, 4096, 512][k])
            offs = [rng.randrange(window // w) * w for _ in L]
            mask = FULL if k % 2 == 0 else _random_mask(rng, rng.choice([0.3, 0.6, 0.9]))
            P(offs, mask=mask, name=f"random_{window}B", side=True)
        for n in (2, 3, 8) if main else ():
            pool = [rng.randrange(512 // w) * w for _ in range(n)]
            offs = [rng.choice(pool) for _ in L]
            mask = FULL if n != 3 else _random_mask(rng, 0.6)
            P(offs, mask=mask, name=f"pool{n}")
        out += [_pat(space, op, w, offs, mask, name) for offs, mask, name in pats]
    return out


# ----------------------------------------------------------------------------- CUDA twin

CU_TEMPLATE = r"""
// Generated by tests/data/ncu/make_fixture.py: one kernel per (space, op, width), one access per launch.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <cuda_runtime.h>

#define SMEM_BYTES %(smem)d
#define GMEM_BYTES %(gmem)d
__constant__ unsigned c_off[32];
__constant__ unsigned c_mask;

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%%s:%%d %%s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

// ---- global loads / stores
__global__ void twin_global_ld_1(const unsigned char* g, unsigned* sink) { unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return;
  unsigned short v; asm volatile("ld.global.u8 %%0, [%%1];" : "=h"(v) : "l"(g + c_off[l]) : "memory"); sink[l] = v; }
__global__ void twin_global_ld_2(const unsigned char* g, unsigned* sink) { unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return;
  unsigned short v; asm volatile("ld.global.u16 %%0, [%%1];" : "=h"(v) : "l"(g + c_off[l]) : "memory"); sink[l] = v; }
__global__ void twin_global_ld_4(const unsigned char* g, unsigned* sink) { unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return;
  unsigned v; asm volatile("ld.global.u32 %%0, [%%1];" : "=r"(v) : "l"(g + c_off[l]) : "memory"); sink[l] = v; }
__global__ void twin_global_ld_8(const unsigned char* g, unsigned* sink) { unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return;
  unsigned a, b; asm volatile("ld.global.v2.u32 {%%0, %%1}, [%%2];" : "=r"(a), "=r"(b) : "l"(g + c_off[l]) : "memory"); sink[l] = a ^ b; }
__global__ void twin_global_ld_16(const unsigned char* g, unsigned* sink) { unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return;
  unsigned a, b, c, d; asm volatile("ld.global.v4.u32 {%%0, %%1, %%2, %%3}, [%%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(g + c_off[l]) : "memory"); sink[l] = a ^ b ^ c ^ d; }
__global__ void twin_global_st_1(unsigned char* g) { unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return;
  unsigned short v = l; asm volatile("st.global.u8 [%%0], %%1;" :: "l"(g + c_off[l]), "h"(v) : "memory"); }
__global__ void twin_global_st_2(unsigned char* g) { unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return;
  unsigned short v = l; asm volatile("st.global.u16 [%%0], %%1;" :: "l"(g + c_off[l]), "h"(v) : "memory"); }
__global__ void twin_global_st_4(unsigned char* g) { unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return;
  asm volatile("st.global.u32 [%%0], %%1;" :: "l"(g + c_off[l]), "r"(l) : "memory"); }
__global__ void twin_global_st_8(unsigned char* g) { unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return;
  asm volatile("st.global.v2.u32 [%%0], {%%1, %%2};" :: "l"(g + c_off[l]), "r"(l), "r"(l + 1) : "memory"); }
__global__ void twin_global_st_16(unsigned char* g) { unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return;
  asm volatile("st.global.v4.u32 [%%0], {%%1, %%2, %%3, %%4};" :: "l"(g + c_off[l]), "r"(l), "r"(l + 1), "r"(l + 2), "r"(l + 3) : "memory"); }

// ---- shared loads / stores (32-bit shared-window addresses)
#define SBASE __shared__ __align__(128) unsigned char s[SMEM_BYTES]; \
  unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return; \
  unsigned a = (unsigned)__cvta_generic_to_shared(s) + c_off[l];
__global__ void twin_shared_ld_1(unsigned* sink) { SBASE unsigned short v; asm volatile("ld.shared.u8 %%0, [%%1];" : "=h"(v) : "r"(a) : "memory"); sink[l] = v; }
__global__ void twin_shared_ld_2(unsigned* sink) { SBASE unsigned short v; asm volatile("ld.shared.u16 %%0, [%%1];" : "=h"(v) : "r"(a) : "memory"); sink[l] = v; }
__global__ void twin_shared_ld_4(unsigned* sink) { SBASE unsigned v; asm volatile("ld.shared.u32 %%0, [%%1];" : "=r"(v) : "r"(a) : "memory"); sink[l] = v; }
__global__ void twin_shared_ld_8(unsigned* sink) { SBASE unsigned x, y; asm volatile("ld.shared.v2.u32 {%%0, %%1}, [%%2];" : "=r"(x), "=r"(y) : "r"(a) : "memory"); sink[l] = x ^ y; }
__global__ void twin_shared_ld_16(unsigned* sink) { SBASE unsigned x, y, z, w; asm volatile("ld.shared.v4.u32 {%%0, %%1, %%2, %%3}, [%%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(a) : "memory"); sink[l] = x ^ y ^ z ^ w; }
__global__ void twin_shared_st_1(int) { SBASE unsigned short v = l; asm volatile("st.shared.u8 [%%0], %%1;" :: "r"(a), "h"(v) : "memory"); }
__global__ void twin_shared_st_2(int) { SBASE unsigned short v = l; asm volatile("st.shared.u16 [%%0], %%1;" :: "r"(a), "h"(v) : "memory"); }
__global__ void twin_shared_st_4(int) { SBASE asm volatile("st.shared.u32 [%%0], %%1;" :: "r"(a), "r"(l) : "memory"); }
__global__ void twin_shared_st_8(int) { SBASE asm volatile("st.shared.v2.u32 [%%0], {%%1, %%2};" :: "r"(a), "r"(l), "r"(l + 1) : "memory"); }
__global__ void twin_shared_st_16(int) { SBASE asm volatile("st.shared.v4.u32 [%%0], {%%1, %%2, %%3, %%4};" :: "r"(a), "r"(l), "r"(l + 1), "r"(l + 2), "r"(l + 3) : "memory"); }

%(atomic_kernels)sstatic int widx(int w) { return w == 1 ? 0 : w == 2 ? 1 : w == 4 ? 2 : w == 8 ? 3 : 4; }

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: twins patterns.txt [first last]\n"); return 2; }
  FILE* f = fopen(argv[1], "r"); if (!f) { perror(argv[1]); return 2; }
  int first = argc > 2 ? atoi(argv[2]) : 0, last = argc > 3 ? atoi(argv[3]) : 1 << 30;
  void (*gld[5])(const unsigned char*, unsigned*) = {twin_global_ld_1, twin_global_ld_2, twin_global_ld_4, twin_global_ld_8, twin_global_ld_16};
  void (*gst[5])(unsigned char*) = {twin_global_st_1, twin_global_st_2, twin_global_st_4, twin_global_st_8, twin_global_st_16};
  void (*sld[5])(unsigned*) = {twin_shared_ld_1, twin_shared_ld_2, twin_shared_ld_4, twin_shared_ld_8, twin_shared_ld_16};
  void (*sst[5])(int) = {twin_shared_st_1, twin_shared_st_2, twin_shared_st_4, twin_shared_st_8, twin_shared_st_16};
  unsigned char* g; CK(cudaMalloc(&g, GMEM_BYTES)); CK(cudaMemset(g, 1, GMEM_BYTES));
  unsigned* sink; CK(cudaMalloc(&sink, 4096)); // load results go here (only *_op_st of a load kernel sees them)
  int id, space, op, width, n = 0; unsigned mask, off[32];
  while (fscanf(f, "%%d %%d %%d %%d %%u", &id, &space, &op, &width, &mask) == 5) {
    for (int i = 0; i < 32; ++i) if (fscanf(f, "%%u", &off[i]) != 1) { fprintf(stderr, "bad line %%d\n", id); return 2; }
    if (id < first || id > last) continue;
    CK(cudaMemcpyToSymbol(c_off, off, sizeof off)); CK(cudaMemcpyToSymbol(c_mask, &mask, sizeof mask));
    int k = widx(width);
    %(atomic_launch)sif (space == 0 && op == 0) gld[k]<<<1, 32>>>(g, sink);
    else if (space == 0) gst[k]<<<1, 32>>>(g);
    else if (op == 0) sld[k]<<<1, 32>>>(sink);
    else sst[k]<<<1, 32>>>(0);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize()); ++n;
  }
  printf("launched %%d patterns\n", n);
  return 0;
}
"""


# Round 5: (op, width) -> (PTX with {sp} for the space, C type of the returned value: None = no result,
# "unused" = a result nobody reads, value operand(s)). Kernels twin_{space}_{op}_{width}(g, sink).
ATOMIC_PTX = {
    ("atom", 4): ("atom.{sp}.add.u32 %0, [%1], %2;", "unsigned", ["l + 1u"]),
    ("atom", 8): ("atom.{sp}.add.u64 %0, [%1], %2;", "unsigned long long", ["(unsigned long long)l + 1ull"]),
    ("red", 4): ("red.{sp}.add.u32 [%0], %1;", None, ["l + 1u"]),
    ("red", 8): ("red.{sp}.add.u64 [%0], %1;", None, ["(unsigned long long)l + 1ull"]),
    ("atomu", 4): ("atom.{sp}.add.u32 %0, [%1], %2;", "unused", ["l + 1u"]),
    ("atomf", 4): ("atom.{sp}.add.f32 %0, [%1], %2;", "float", ["1.0f"]),
    ("redf", 4): ("red.{sp}.add.f32 [%0], %1;", None, ["1.0f"]),
    ("cas", 4): ("atom.{sp}.cas.b32 %0, [%1], %2, %3;", "unsigned", ["0u", "l + 1u"]),
    ("max", 4): ("atom.{sp}.max.u32 %0, [%1], %2;", "unsigned", ["l + 1u"]),
    ("exch", 4): ("atom.{sp}.exch.b32 %0, [%1], %2;", "unsigned", ["l + 1u"]),
}
_CONSTRAINT = {"unsigned": "r", "unused": "r", "unsigned long long": "l", "float": "f"}
_SINK = {
    "unsigned": "sink[l] = v;",
    "unsigned long long": "sink[l] = (unsigned)(v ^ (v >> 32));",
    "float": "sink[l] = __float_as_uint(v);",
    "unused": "",
}


def _atomic_kernel(space: str, op: str, width: int) -> str:
    ptx, ret, vals = ATOMIC_PTX[(op, width)]
    ptx = ptx.format(sp=space)
    vtype = "l" if width == 8 else "f" if vals[-1] == "1.0f" else "r"
    ins = ['"l"(g + c_off[l])' if space == "global" else '"r"(a)'] + [f'"{vtype}"({v})' for v in vals]
    if ret is None:
        body = f'asm volatile("{ptx}" :: {", ".join(ins)} : "memory");'
    else:
        ctype = "__attribute__((unused)) unsigned" if ret == "unused" else ret
        body = f'{ctype} v; asm volatile("{ptx}" : "={_CONSTRAINT[ret]}"(v) : {", ".join(ins)} : "memory");'
        body += f" {_SINK[ret]}" if _SINK[ret] else ""
    head = f"__global__ void twin_{space}_{op}_{width}(unsigned char* g, unsigned* sink) {{ "
    if space == "global":
        return head + "unsigned l = threadIdx.x; if (!((c_mask >> l) & 1u)) return;\n  " + body + " }\n"
    return head + "SBASE " + body + " }\n"


def _atomic_sources(kinds: list[tuple]) -> dict:
    """The CUDA of round 5's atomic kernels and of their dispatch; empty for rounds 1-4 (their twins.cu is as it was)."""
    if not kinds:
        return {"atomic_kernels": "", "atomic_launch": ""}
    lines = ["// ---- atomics (round 5): one atom / red per active lane; shared kernels ignore g"]
    lines += [_atomic_kernel(*k).rstrip("\n") for k in kinds]
    lines.append("typedef void (*twin_fn)(unsigned char*, unsigned*);")
    lines.append("static twin_fn atomic_twin(int space, int op, int width) {")
    for sp, op, w in kinds:
        cond = f"space == {SPACES.index(sp)} && op == {OP_CODES.index(op)} && width == {w}"
        lines.append(f"  if ({cond}) return twin_{sp}_{op}_{w};")
    lines.append("  return 0;\n}\n")
    launch = (
        "if (op >= 2) { twin_fn t = atomic_twin(space, op, width);\n"
        '      if (!t) { fprintf(stderr, "no twin for pattern %d (space %d op %d width %d)\\n", id, space, op, width); '
        "return 2; }\n"
        "      t<<<1, 32>>>(g, sink); }\n    else "
    )
    return {"atomic_kernels": "\n".join(lines) + "\n", "atomic_launch": launch}


def write_sources(pats: list[dict], d: str) -> tuple[str, str]:
    os.makedirs(d, exist_ok=True)
    txt = os.path.join(d, "patterns.txt")
    with open(txt, "w") as f:
        for p in pats:
            f.write(
                f"{p['id']} {SPACES.index(p['space'])} {OP_CODES.index(p['op'])} {p['width']} {p['mask']} "
                + " ".join(str(o) for o in p["offsets"])
                + "\n"
            )
    kinds = sorted({(p["space"], p["op"], p["width"]) for p in pats if p["op"] in ATOMIC_OPS})
    for k in kinds:
        assert (k[1], k[2]) in ATOMIC_PTX, k
    cu = os.path.join(d, "twins.cu")
    with open(cu, "w") as f:
        f.write(CU_TEMPLATE % {"smem": SMEM_BYTES, "gmem": GMEM_BYTES, **_atomic_sources(kinds)})
    return txt, cu


def build(cu: str, d: str) -> str:
    exe = os.path.join(d, "twins")
    cmd = ["nvcc", "-O3", "-gencode=arch=compute_90,code=sm_90", "-o", exe, cu]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return exe


_SASS_MEM = re.compile(r"\b((?:ATOM|RED|LD|ST)[A-Z]*(?:\.[A-Z0-9_]+)*)\b")


def dump_sass(exe: str, d: str) -> dict:
    """cuobjdump -sass -> d/twins.sass; returns {kernel: its memory instructions} for the atomic kernels
    (what ptxas made of each PTX atom / red: ATOMG, REDG, ATOMS, or a loop of LDS + ATOMS.CAST)."""
    try:
        r = subprocess.run(["cuobjdump", "-sass", exe], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        print("no SASS dump:", e)
        return {}
    with open(os.path.join(d, "twins.sass"), "w") as f:
        f.write(r.stdout)
    out: dict[str, list[str]] = {}
    name = None
    for ln in r.stdout.splitlines():
        m = re.search(r"Function : _Z(\d+)(\w+)", ln)
        if m:
            name = m.group(2)[: int(m.group(1))]  # the mangled name's length prefix
            continue
        code = ln.split("/*")
        if name is None or len(code) < 3 or "*/" not in code[1]:
            continue
        op = _SASS_MEM.search(code[1].split("*/", 1)[1].split(";")[0])
        if op and not op.group(1).startswith(("LDC", "LDL", "STL")):
            out.setdefault(name, []).append(op.group(1))
    atomic = {k: " ".join(v) for k, v in sorted(out.items()) if k.split("_")[2] in ATOMIC_OPS}
    for k, v in atomic.items():
        print(f"  sass {k}: {v}")
    return atomic


def _ncu(exe: str, txt: str, metrics: list[str], first: int, last: int, timeout: float) -> subprocess.CompletedProcess:
    cmd = [
        "ncu",
        "--clock-control",
        "none",
        "--csv",
        "--print-units",
        "base",
        "--kernel-name",
        "regex:twin_",
        "--metrics",
        ",".join(metrics),
        exe,
        txt,
        str(first),
        str(last),
    ]
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def parse_csv(text: str) -> list[dict]:
    """ncu --csv (one row per kernel x metric) -> one dict per launch, in launch order."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    by_id: dict[int, dict] = {}
    for r in rows:
        k = int(r["ID"])
        rec = by_id.setdefault(k, {"kernel": r["Kernel Name"], "metrics": {}})
        v = r["Metric Value"].replace(",", "")
        try:
            val = float(v)
            rec["metrics"][r["Metric Name"]] = int(val) if val.is_integer() else val
        except ValueError:
            rec["metrics"][r["Metric Name"]] = v
    return [by_id[k] for k in sorted(by_id)]


def _query_metrics() -> set[str] | None:
    """The base metric names this ncu lists for gh100 (the H200's chip; round 1's sim.sh asked the same way), or
    failing that for the GPU it finds; None if it lists none."""
    for chip in (["--chip", "gh100"], []):
        try:
            r = subprocess.run(["ncu", "--query-metrics", *chip], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            print("ncu --query-metrics", *chip, "failed:", e)
            continue
        names = {ln.split()[0] for ln in r.stdout.splitlines() if ln.split() and "__" in ln.split()[0]}
        if len(names) >= 100:
            return names
        print("ncu --query-metrics", *chip, f"listed {len(names)} names:", r.stdout[-500:], r.stderr[-500:])
    return None


def _trial(exe: str, txt: str, metrics: list[str], timeout: float = 60) -> bool:
    """One launch (pattern 0) under ncu with these metrics: did ncu run and report every one of them?"""
    try:
        r = _ncu(exe, txt, metrics, 0, 0, timeout)
    except subprocess.TimeoutExpired:
        print("trial timed out")
        return False
    ok = r.returncode == 0 and "twin_" in r.stdout and all(m in r.stdout for m in metrics)
    if not ok:
        print("trial failed:", r.stdout[-1500:], r.stderr[-1500:])
    return ok


def probe_metrics(exe: str, txt: str, core: list[str], extra: list[str], out: str) -> tuple[list[str], list[str], str]:
    """The metrics to ask for: `core` and those of `extra` that this ncu knows, checked name by name.

    A name is known if `ncu --query-metrics` lists its base name (one call), or, where that lists nothing, if a
    one-launch trial with it passes (one call per name). Then one launch with all of them: if that fails, each
    kept name is tried alone with the core ones. Returns (metrics, dropped extra names, how they were judged).
    """
    known = _query_metrics()
    if known is not None:
        with open(os.path.join(out, "metrics_list.txt"), "w") as f:
            f.write("\n".join(sorted(n for n in known if re.search(r"atom|red|shared|global", n))) + "\n")
        how = "ncu --query-metrics"
        keep = [m for m in extra if m.rsplit(".", 1)[0] in known]
    else:
        how = "one trial launch per name"
        keep = [m for m in extra if _trial(exe, txt, core + [m])]
    if not _trial(exe, txt, core + keep):
        how += "; all together failed, so one trial launch per name"
        keep = [m for m in keep if _trial(exe, txt, core + [m])]
        if keep and not _trial(exe, txt, core + keep):
            how += "; still failed together: core names only"
            keep = []
    dropped = [m for m in extra if m not in keep]
    print(f"metrics ({how}): {len(core)} core + {len(keep)} extra; dropped: {dropped or 'none'}", flush=True)
    return core + keep, dropped, how


def run_ncu(
    pats: list[dict],
    exe: str,
    txt: str,
    out: str,
    chunks: int,
    budget_s: float,
    probe_first: bool = True,
    metrics: list[str] | None = None,
) -> list[dict]:
    """Profile the patterns in `chunks` ncu runs within budget_s seconds. metrics: the names to ask for
    (already probed); None = rounds 1-4: METRICS_CORE + METRICS_EXTRA, checked by one launch if probe_first."""
    t0 = time.time()
    given = metrics is not None
    metrics = metrics if given else METRICS_CORE + METRICS_EXTRA
    probe = _ncu(exe, txt, metrics, 0, 0, 120) if probe_first and not given else None
    if probe is not None and (probe.returncode != 0 or "twin_" not in probe.stdout):
        print("ncu with extra metrics failed; core metrics only:\n", probe.stdout[-2000:], probe.stderr[-2000:])
        metrics = METRICS_CORE
    n = len(pats)
    bounds = [round(i * n / chunks) for i in range(chunks + 1)]
    results: list[dict] = []
    for c in range(chunks):
        first, last = bounds[c], bounds[c + 1] - 1
        left = budget_s - (time.time() - t0)
        if left < 10:
            print(f"out of time before chunk {c}")
            break
        try:
            r = _ncu(exe, txt, metrics, first, last, left)
        except subprocess.TimeoutExpired:
            print(f"chunk {c} timed out")
            break
        with open(os.path.join(out, f"ncu_chunk{c}.csv"), "w") as f:
            f.write(r.stdout)
        if r.returncode != 0:
            print(r.stdout[-3000:], r.stderr[-3000:])
        recs = parse_csv(r.stdout)
        print(
            f"chunk {c}: patterns {first}..{last}: {len(recs)} launches profiled, {time.time() - t0:.0f}s", flush=True
        )
        if len(recs) != last - first + 1:
            print("launch count mismatch; dropping chunk", r.stderr[-2000:])
            continue
        bad = 0
        for p, rec in zip(pats[first : last + 1], recs):
            expect = f"twin_{p['space']}_{p['op']}_{p['width']}"
            if not re.search(expect + r"(?!\d)", rec["kernel"]):
                bad += 1
                continue
            results.append({**p, "kernel": rec["kernel"], "metrics": rec["metrics"]})
        if bad:
            print(f"chunk {c}: {bad} launches did not match their pattern's kernel")
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["gen", "build", "all"])
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "tilewise_ncu"), help="working/output folder")
    ap.add_argument("--round", type=int, default=1)
    ap.add_argument("--chunks", type=int, default=3)
    ap.add_argument("--budget", type=float, default=200.0, help="seconds for all ncu runs")
    ap.add_argument("--no-probe", action="store_true", help="skip the one-launch run that checks the metric names")
    a = ap.parse_args(argv)
    pats = patterns(a.round)
    atomics = any(p["op"] in ATOMIC_OPS for p in pats)
    txt, cu = write_sources(pats, a.out)
    print(f"{len(pats)} patterns -> {txt}")
    if a.what == "gen":
        return 0
    exe = build(cu, a.out)
    sass = dump_sass(exe, a.out) if atomics else {}
    if a.what == "build":
        return 0
    t0 = time.time()
    extra = {}
    if atomics:  # round 5: every extra metric name checked on its own; --no-probe: the core names only
        if a.no_probe:
            metrics, dropped, how = METRICS_ATOMIC_CORE, list(METRICS_ATOMIC_EXTRA), "--no-probe: core names only"
        else:
            metrics, dropped, how = probe_metrics(exe, txt, METRICS_ATOMIC_CORE, METRICS_ATOMIC_EXTRA, a.out)
        extra = {"metrics_asked": metrics, "metrics_dropped": dropped, "metrics_probe": how, "sass": sass}
        results = run_ncu(pats, exe, txt, a.out, a.chunks, a.budget - (time.time() - t0), False, metrics)
    else:
        results = run_ncu(pats, exe, txt, a.out, a.chunks, a.budget, probe_first=not a.no_probe)
    info = {}
    for cmd in (
        ["ncu", "--version"],
        ["nvcc", "--version"],
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv"],
    ):
        try:
            info[cmd[0]] = subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
        except OSError as e:
            info[cmd[0]] = repr(e)
    fixture = {
        "about": "Nsight Compute counters for one warp doing one access per launch; made by make_fixture.py",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "round": a.round,
        "tools": info,
        **extra,
        "patterns": results,
    }
    path = os.path.join(a.out, f"ncu_access_round{a.round}.json")
    with open(path, "w") as f:
        json.dump(fixture, f, indent=0)
    print(f"{len(results)} of {len(pats)} patterns measured -> {path}")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
