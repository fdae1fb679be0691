"""What the memory system does with the 32 addresses of one warp instruction.

Global memory: 32 threads reading 128 consecutive bytes merge into one transfer; scattered addresses split
into up to 32 (counted in 32-byte sectors). Shared memory: 32 banks, each 4 bytes wide, the n-th 4-byte word
in bank n % 32; threads on one address get a broadcast (counted in wavefronts).

`analyze_access` returns Nsight Compute's own counters for one instruction of one warp, as measured on an
H200 (tests/data/ncu/, made by make_fixture.py there: 2766 patterns in four rounds, every one reproduced
exactly; the fourth round, 1476 patterns, tested the 8/16-byte load rule below on data it was not fitted to).
`analyze_batch` is the same rule for many warps at once (rows of 32 lanes), which is what the executor calls.

Measured rules (the textbook's where it holds):
- global: sectors = distinct 32-byte sectors of the active lanes; one request per warp instruction, for
  every width from 1 to 16 bytes, loads and stores alike.
- shared, 1/2/4-byte lanes: wavefronts = the most distinct 4-byte words held by one bank; lanes reading
  one word share it (broadcast, multicast); conflicts = wavefronts - 1.
- shared, 8/16-byte lanes: see `_shared` (phases of 128 bytes of lane data; stores never merge phases;
  loads merge two phases when the whole warp's lanes come in same-address pairs, i with i^1 or i with i^2).
- atomics (round 5, 508 patterns, 505 reproduced; see `_atomic`): lanes on one address never merge.
  Global: sectors = per sector, the most lanes on one of its addresses. Shared: wavefronts = the most
  lanes on one bank, counted lane by lane. A shared float32 or 8-byte add is a CAS loop (`_cas_loop`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tilewise.errors import InputError

WARP = 32
SECTOR = 32  # bytes in a global-memory sector
BANKS = 32
BANK_BYTES = 4
ROW = BANKS * BANK_BYTES  # 128 bytes: one word in every bank
WIDTHS = (1, 2, 4, 8, 16)
SPACES = ("global", "shared")
ATOMIC_WIDTHS = (4, 8)  # the widths round 5 measured (the executor counts other widths with the same rule)

_BIG = np.int64(1) << 62


def _array(name: str, value: Any) -> np.ndarray:
    """`value` as a numpy array, or InputError for what numpy cannot make one of (ragged lists, objects)."""
    try:
        a = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{name} must be a flat list of {WARP} numbers, got {_describe(value)}") from None
    if a.dtype == object:
        raise InputError(f"{name} must be a flat list of {WARP} numbers, got {_describe(value)}")
    return a


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_active(active: Any, n: int = WARP) -> np.ndarray:
    if active is None:
        return np.ones(n, dtype=bool)
    if isinstance(active, (int, np.integer)) and not isinstance(active, bool):
        m = int(active)
        if m < 0 or m >= 1 << n:
            raise InputError(f"active must be a {n}-bit lane mask (0 .. 0x{(1 << n) - 1:X}), got {active!r}")
        bits: np.ndarray = (m >> np.arange(n)) & 1 == 1
        return bits
    a = _array("active", active)
    if a.shape != (n,):
        raise InputError(f"active must be a {n}-bit mask or {n} booleans, got shape {a.shape}")
    return a.astype(bool)


def analyze_access(
    addresses: Sequence[int] | np.ndarray,
    width: int,
    space: str,
    active: int | Sequence[bool] | np.ndarray | None = None,
    store: bool = False,
    atomic: bool | str = False,
) -> dict[str, Any]:
    """Nsight Compute's counters for one warp-wide memory instruction on an H200.

    addresses: 32 byte addresses, one per lane (lane i = element i); each a multiple of `width`.
    width: bytes per lane, 1, 2, 4, 8 or 16 (16 = float4 / int4).
    space: "global" or "shared".
    active: the lanes that execute it: a 32-bit mask (bit i = lane i) or 32 booleans; None = all.
    store: a store (st) rather than a load (ld).
    atomic: an atomic instead of a load or store (`store` is then ignored): True (or "rmw") for one
        atom / red instruction (atomicAdd, atomicMax, atomicExch, ...: ATOMG, REDG, ATOMS); "cas" for
        atomicCAS (on shared memory it moves two operands a lane: twice the wavefronts); "loop" for the
        compare-and-swap loop ptxas makes of a shared-memory float32 add or 8-byte add (LDS +
        ATOMS.CAST.SPIN, repeated until every lane succeeded). Global atomics count alike whatever the op,
        and whether the result is used (REDG, op_red) or not (ATOMG, op_atom): same figures.

    Returns for "global": sectors (l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st,atom,red}) and requests
    (l1tex__t_requests_...); for "shared": wavefronts (l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st,
    atom}) and bank_conflicts (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st,atom}), and for loads
    and stores phases_paired (1 when an 8/16-byte load's phases went through two at a time because its lanes
    pair by i^1 or i^2, else 0); plus `ideal` (the fewest sectors or wavefronts the active lanes' distinct
    bytes could take) and `active_lanes`.
    atomic="loop" adds passes (the loop's trips) and the loop's LDS: ld_wavefronts, ld_bank_conflicts
    (op_ld), ld_ideal, ld_lanes, ld_banks; its wavefronts and bank_conflicts are the ATOMS.CAST's.
    """
    if space not in SPACES:
        raise InputError(f"space must be 'global' or 'shared', got {space!r}")
    if atomic is not False and width not in ATOMIC_WIDTHS:
        raise InputError(f"atomics were measured with 4- and 8-byte lanes only, got width={width!r}")
    addr, act = _warp_input(addresses, width, active)
    r = analyze_batch(addr[None, :], act[None, :], width, space, store, atomic)
    out = {k: int(v[0]) for k, v in r.items()}
    return out


def _warp_input(addresses: Any, width: int, active: Any) -> tuple[np.ndarray, np.ndarray]:
    """One warp's addresses and active lanes, checked: 32 non-negative integers aligned to `width`."""
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width not in WIDTHS:
        raise InputError(f"width must be one of {WIDTHS} bytes, got {width!r}")
    addr = _array("addresses", addresses)
    if addr.shape != (WARP,):
        raise InputError(f"addresses must be {WARP} byte addresses (one per lane), got shape {addr.shape}")
    if not np.issubdtype(addr.dtype, np.integer):
        if not np.issubdtype(addr.dtype, np.number) or not np.all(np.mod(addr, 1) == 0):
            raise InputError(f"addresses must be integers, got {addr.dtype} values")
        if np.any(np.abs(addr) >= 2.0**62):
            raise InputError("addresses must be below 2^62")
    addr = addr.astype(np.int64)
    act = _as_active(active)
    if np.any(addr[act] < 0):
        raise InputError("addresses must be non-negative")
    if np.any(addr[act] >= 1 << 62):
        raise InputError("addresses must be below 2^62")
    bad = act & (addr % width != 0)
    if np.any(bad):
        lane = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"addresses must be aligned to width={width}: lane {lane} has address {int(addr[lane])} "
            "(the hardware faults on a misaligned access)"
        )
    return addr, act


# ----------------------------------------------------------------------------- the rules


def distinct_per_row(keys: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Number of distinct values of `keys` among `valid` entries, per row (rows x cols)."""
    k = np.where(valid, keys, _BIG)
    k = np.sort(k, axis=1)
    new = np.ones(k.shape, dtype=bool)
    new[:, 1:] = k[:, 1:] != k[:, :-1]
    out: np.ndarray = np.sum(new & (k != _BIG), axis=1)
    return out


def _global(addr: np.ndarray, act: np.ndarray, width: int, store: bool) -> dict[str, Any]:
    any_lane = act.any(axis=1)
    sectors = distinct_per_row(addr // SECTOR, act)
    requests = any_lane.astype(np.int64)
    nbytes = _distinct_bytes(addr, act, width)
    ideal = -(-nbytes // SECTOR)
    return {"sectors": sectors, "requests": requests, "ideal": ideal, "active_lanes": act.sum(axis=1)}


def _distinct_bytes(addr: np.ndarray, act: np.ndarray, width: int) -> np.ndarray:
    # Lanes are aligned to their width, so two lanes' byte ranges are equal or disjoint.
    return distinct_per_row(addr, act) * width


def _bank_counts(words: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Distinct 4-byte words per bank, per row: (rows, words) -> (rows, 32)."""
    rows = words.shape[0]
    key = np.where(valid, (words % BANKS) * (np.int64(1) << 48) + words, _BIG)
    key = np.sort(key, axis=1)
    new = np.ones(key.shape, dtype=bool)
    new[:, 1:] = key[:, 1:] != key[:, :-1]
    new &= key != _BIG
    row = np.broadcast_to(np.arange(rows)[:, None], key.shape)
    bank = key[new] >> 48
    return np.bincount(row[new] * BANKS + bank, minlength=rows * BANKS).reshape(rows, BANKS)


def lane_words(addr: np.ndarray, act: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The 4-byte words each lane touches (a 1- or 2-byte access touches one), flattened per row."""
    nw = max(1, width // BANK_BYTES)
    words = (addr // BANK_BYTES)[..., None] + np.arange(nw)
    return words.reshape(*addr.shape[:-1], -1), np.repeat(act, nw, axis=-1)


def _shared(addr: np.ndarray, act: np.ndarray, width: int, store: bool) -> dict[str, Any]:
    """Wavefronts and bank conflicts of one shared-memory instruction per row, as measured on an H200.

    A phase is 128 bytes of lane data: the whole warp for 1-, 2- and 4-byte accesses, a half-warp
    (16 lanes) for 8 bytes, a quarter-warp (8 lanes) for 16 bytes. One phase takes as many wavefronts
    as the most distinct 4-byte words any one bank holds among its active lanes.
    Stores: each active phase on its own (a 16-byte broadcast store takes 4 wavefronts).
    Loads of 8 and 16 bytes: two neighbouring phases (the two half-warps for 8 bytes, the two quarters of
    each half-warp for 16 bytes) go through together, as one phase of their union, when the whole warp's
    active lanes come in same-address pairs: every active lane i reads what lane i ^ 1 reads, or every
    active lane i reads what lane i ^ 2 reads (an inactive partner matches anything). Otherwise each phase
    goes on its own. The choice is one for the whole warp: one broken pair anywhere splits every phase
    pair. So a 16-byte broadcast load takes 2 wavefronts, quarters that read the same 128 B take 4 (lane i
    pairs with i ^ 8 there, which does not count), and lanes 0, 1, 4, 5, 8, 9, ... of a contiguous 16-byte
    load (the others inactive) pair with nobody and share a pass per half-warp.
    bank_conflicts = wavefronts minus one per pass (a merged pair, or each active phase on its own).
    """
    rows = addr.shape[0]
    lanes_per_phase = WARP if width <= BANK_BYTES else ROW // width
    nph = WARP // lanes_per_phase
    a = addr.reshape(rows * nph, lanes_per_phase)
    m = act.reshape(rows * nph, lanes_per_phase)
    words, wvalid = lane_words(a, m, width)
    counts = _bank_counts(words, wvalid)  # (rows * nph, 32)
    ph_active = m.any(axis=1)
    ph_wf = np.where(ph_active, np.maximum(counts.max(axis=1), 1), 0).reshape(rows, nph)
    ph_conf = np.maximum(ph_wf - 1, 0)
    any_lane = act.any(axis=1)
    ideal = np.where(any_lane, np.maximum(1, -(-_distinct_bytes(addr, act, width) // ROW)), 0)
    if store or nph == 1:
        return {
            "wavefronts": ph_wf.sum(axis=1),
            "bank_conflicts": ph_conf.sum(axis=1),
            "ideal": ideal,
            "phases_paired": np.zeros(rows, dtype=np.int64),
        }
    # loads of 8 or 16 bytes: the phase pairs go through as one when the whole warp's lanes come in
    # same-address pairs, either lane i with lane i^1 or lane i with lane i^2 (inactive lanes match anything)
    ng = nph // 2
    glanes = 2 * lanes_per_phase
    ok = np.broadcast_to((_paired(addr, act, 1) | _paired(addr, act, 2))[:, None], (rows, ng))
    ga = addr.reshape(rows * ng, glanes)
    gm = act.reshape(rows * ng, glanes)
    gwords, gvalid = lane_words(ga, gm, width)
    g_active = gm.any(axis=1).reshape(rows, ng)
    union = np.maximum(_bank_counts(gwords, gvalid).max(axis=1), 1).reshape(rows, ng)
    pw = ph_wf.reshape(rows, ng, 2)
    pc = ph_conf.reshape(rows, ng, 2)
    g_wf = np.where(g_active, np.where(ok, union, pw.sum(axis=2)), 0)
    g_conf = np.where(g_active, np.where(ok, union - 1, pc.sum(axis=2)), 0)
    return {
        "wavefronts": g_wf.sum(axis=1),
        "bank_conflicts": g_conf.sum(axis=1),
        "ideal": ideal,
        "phases_paired": (ok[:, 0] & any_lane).astype(np.int64),
    }


def _paired(addr: np.ndarray, act: np.ndarray, xor: int) -> np.ndarray:
    """Per row: does every pair of active lanes (i, i ^ xor) ask for one address?"""
    partner = np.arange(WARP) ^ xor
    both = act & act[:, partner]
    out: np.ndarray = np.all(~both | (addr == addr[:, partner]), axis=1)
    return out


def shared_passes(
    addresses: Sequence[int] | np.ndarray,
    width: int,
    active: int | Sequence[bool] | np.ndarray | None = None,
    store: bool = False,
) -> dict[str, Any]:
    """How one warp's shared-memory load or store goes through the banks: its passes, lane by lane.

    The rule of `analyze_access` (the same helpers), spelled out for one warp so that a reader can see
    it: `phase_lanes` lanes make a phase (128 bytes of lane data); for 8/16-byte loads `pairing` says
    which partner every active lane shares its address with ("i^1", "i^2", or None), and when there is
    one the phases go in pairs. Each pass lists its active lanes and its wavefronts (the most distinct
    4-byte words one bank holds); the passes' wavefronts add up to `analyze_access`'s.
    """
    addr, act = _warp_input(addresses, width, active)
    lanes_per_phase = WARP if width <= BANK_BYTES else ROW // width
    pairing = None
    group = lanes_per_phase
    if not store and width > BANK_BYTES:
        for x in (1, 2):
            if _paired(addr[None, :], act[None, :], x)[0]:
                pairing = f"i^{x}"
                group = 2 * lanes_per_phase
                break
    passes = []
    for start in range(0, WARP, group):
        lanes = [i for i in range(start, start + group) if act[i]]
        if not lanes:
            continue
        words, valid = lane_words(addr[None, start : start + group], act[None, start : start + group], width)
        wf = max(1, int(_bank_counts(words, valid).max()))
        passes.append({"lanes": lanes, "first_lane": start, "last_lane": start + group - 1, "wavefronts": wf})
    return {"phase_lanes": lanes_per_phase, "pairing": pairing, "passes": passes}


def analyze_batch(
    addr: np.ndarray, act: np.ndarray, width: int, space: str, store: bool = False, atomic: bool | str = False
) -> dict[str, Any]:
    """`analyze_access` for many warps: addr and act are (warps, 32); returns arrays of length warps."""
    addr = np.asarray(addr, dtype=np.int64)
    act = np.asarray(act, dtype=bool)
    if atomic is not False:
        return _atomic(addr, act, width, space, _atomic_kind(atomic, space))
    if space == "global":
        return _global(addr, act, width, store)
    r = _shared(addr, act, width, store)
    r["active_lanes"] = act.sum(axis=1)
    return r


# ----------------------------------------------------------------------------- atomics (round 5)

ATOMIC_KINDS = ("rmw", "cas", "loop")


def _atomic_kind(atomic: bool | str, space: str) -> str:
    kind = "rmw" if atomic is True else atomic
    if kind not in ATOMIC_KINDS:
        raise InputError(f"atomic must be False, True or one of {ATOMIC_KINDS}, got {atomic!r}")
    if kind == "loop" and space != "shared":
        raise InputError(
            "atomic='loop' is the compare-and-swap loop ptxas makes of a shared-memory float32 or 8-byte add; "
            f"a {space} atomic is one instruction (atomic=True), got space={space!r}"
        )
    return kind


def _atomic(addr: np.ndarray, act: np.ndarray, width: int, space: str, kind: str) -> dict[str, Any]:
    """One atomic instruction per row (atom or red), as Nsight Compute counted it on an H200 (round 5).

    Lanes on one address are never merged into one operation, unlike a load's broadcast or a store:
    - global (ATOMG / REDG, every op and width measured: add u32/u64/f32, cas, max, exch): one request;
      sectors = for every 32-byte sector, the most active lanes on any one address in it (lanes on different
      addresses of one sector go together, lanes on one address go one after another). Nsight Compute files
      an ATOMG under op_atom and a REDG (a `red`, or an `atom` whose result is unused) under op_red, with the
      same counts.
    - shared, kind "rmw" (ATOMS.ADD/MIN/MAX/EXCH...): wavefronts = the most active lanes on any one bank,
      counted lane by lane (no broadcast: 32 lanes on one word take 32); bank_conflicts = wavefronts - 1.
    - shared, kind "cas" (ATOMS.CAS, two operands a lane): wavefronts twice that, bank_conflicts the same.
    - shared, kind "loop": see `_cas_loop` (extra keys passes, ld_*).
    `ideal` is the load/store one (the fewest sectors or wavefronts the distinct bytes could take), i.e. what
    one atomic per distinct address would cost after the warp combined its lanes.
    """
    if space == "global":
        r = _global(addr, act, width, True)  # requests, ideal, active_lanes as for a store
        r["sectors"] = _per_key_max(addr // SECTOR, addr, act)
        return r
    any_lane = act.any(axis=1)
    ideal = np.where(any_lane, np.maximum(1, -(-_distinct_bytes(addr, act, width) // ROW)), 0)
    if kind == "loop":
        r = _cas_loop(addr, act, width)
        r["ideal"] = ideal
        r["active_lanes"] = act.sum(axis=1)
        return r
    words, wvalid = lane_words(addr, act, width)
    rows = addr.shape[0]
    row = np.broadcast_to(np.arange(rows)[:, None], words.shape)
    per_bank = np.bincount((row * BANKS + words % BANKS)[wvalid], minlength=rows * BANKS).reshape(rows, BANKS)
    passes = per_bank.max(axis=1)  # lanes counted with multiplicity: one per lane, not per distinct word
    wf = passes * (2 if kind == "cas" else 1)
    conf = np.maximum(passes - 1, 0)
    return {"wavefronts": wf, "bank_conflicts": conf, "ideal": ideal, "active_lanes": act.sum(axis=1)}


def _per_key_max(group: np.ndarray, addr: np.ndarray, act: np.ndarray) -> np.ndarray:
    """Per row: the sum over distinct `group` values of the most active lanes sharing one address in it."""
    same = (addr[:, :, None] == addr[:, None, :]) & act[:, None, :]  # (rows, lane, other lane)
    n_same = same.sum(axis=2)  # lanes on my address (me included when I am active)
    g = np.where(act, group, _BIG)
    # for each lane, the busiest address of its group: max over active lanes j of my group of n_same[j]
    in_group = (g[:, :, None] == g[:, None, :]) & act[:, None, :]
    busiest = np.where(in_group, n_same[:, None, :], 0).max(axis=2)
    # count each group once: at its first active lane
    first = act & ~np.tril(in_group, k=-1).any(axis=2)
    out: np.ndarray = np.where(first, busiest, 0).sum(axis=1)
    return out


def _cas_loop(addr: np.ndarray, act: np.ndarray, width: int) -> dict[str, Any]:
    """What ptxas makes of a shared-memory float32 add or 8-byte add: a loop of LDS + ATOMS.CAST.SPIN.

    Each pass, the lanes still pending load their word (LDS, counted with the load rule) and try a
    compare-and-swap. Measured (114 of 114 such patterns): in each phase (the whole warp for 4-byte lanes,
    each half-warp for 8-byte lanes, in order) the lowest pending lane of every bank (4 bytes) or bank
    pair (8 bytes) succeeds, unless an earlier phase of the same pass already changed its address; the
    others retry. The ATOMS.CAST takes 2 wavefronts per phase with a pending lane and reports no bank
    conflict. Returns wavefronts and bank_conflicts (the ATOMS.CAST: op_atom), passes (the loop's trips:
    ATOMS.CAST and LDS warp instructions), and the loop's LDS: ld_wavefronts, ld_bank_conflicts,
    ld_ideal, ld_lanes (pending lanes summed over passes), ld_banks (distinct banks, summed over passes).
    """
    rows = addr.shape[0]
    lanes_per_phase = WARP if width <= BANK_BYTES else ROW // width
    unit = max(width, BANK_BYTES)
    nkeys = BANKS * BANK_BYTES // unit  # banks, or bank pairs for 8 bytes
    phase = np.arange(WARP) // lanes_per_phase
    key = np.where(act, phase * BANKS + (addr // unit) % nkeys, -1)
    same_key = key[:, :, None] == key[:, None, :]
    same_addr = addr[:, :, None] == addr[:, None, :]
    earlier = np.tril(np.ones((WARP, WARP), dtype=bool), k=-1)  # [i, j]: j < i
    earlier_phase = phase[None, :] < phase[:, None]  # [i, j]: phase(j) < phase(i)
    pend = act.copy()
    z = np.zeros(rows, dtype=np.int64)
    out = {k: z.copy() for k in ("wavefronts", "passes", "ld_wavefronts", "ld_bank_conflicts", "ld_ideal")}
    out["ld_lanes"] = z.copy()
    out["ld_banks"] = z.copy()
    while pend.any():
        live = pend.any(axis=1)
        ld = _shared(addr, pend, width, store=False)
        out["ld_wavefronts"] += ld["wavefronts"]
        out["ld_bank_conflicts"] += ld["bank_conflicts"]
        out["ld_ideal"] += ld["ideal"]
        out["ld_lanes"] += pend.sum(axis=1)
        out["ld_banks"] += distinct_per_row((addr // BANK_BYTES) % BANKS, pend)
        out["passes"] += live
        phases_live = pend.reshape(rows, -1, lanes_per_phase).any(axis=2).sum(axis=1)
        out["wavefronts"] += 2 * phases_live
        # the lowest pending lane of each (phase, bank) key ...
        win = pend & ~(same_key & earlier & pend[:, None, :]).any(axis=2)
        # ... unless a winner of an earlier phase of this pass changed the same address (phases in order)
        for ph in range(1, WARP // lanes_per_phase):
            stale = (same_addr & earlier_phase & win[:, None, :]).any(axis=2) & (phase == ph)
            win &= ~stale
        pend &= ~win
    out["bank_conflicts"] = z.copy()
    return out
