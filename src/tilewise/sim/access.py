"""What the memory system does with the 32 addresses of one warp instruction.

The tips document: "32 threads read 128 consecutive bytes ... merge into one transfer" (global memory,
counted in 32-byte sectors) and "32 banks, each 4 bytes wide; the n-th 4-byte word lives in bank n % 32 ...
if they all read the same address, that is a broadcast" (shared memory, counted in wavefronts).

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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tilewise.errors import InputError

WARP = 32
SECTOR = 32  # bytes in a global-memory sector
BANKS = 32
BANK_BYTES = 4
ROW = BANKS * BANK_BYTES  # 128 bytes: one word in every bank
WIDTHS = (1, 2, 4, 8, 16)
SPACES = ("global", "shared")

_BIG = np.int64(1) << 62


def _as_active(active, n: int = WARP) -> np.ndarray:
    if active is None:
        return np.ones(n, dtype=bool)
    if isinstance(active, (int, np.integer)) and not isinstance(active, bool):
        m = int(active)
        if m < 0 or m >= 1 << n:
            raise InputError(f"active must be a {n}-bit lane mask (0 .. 0x{(1 << n) - 1:X}), got {active!r}")
        return (m >> np.arange(n)) & 1 == 1
    a = np.asarray(active)
    if a.shape != (n,):
        raise InputError(f"active must be a {n}-bit mask or {n} booleans, got shape {a.shape}")
    return a.astype(bool)


def analyze_access(
    addresses: Sequence[int] | np.ndarray,
    width: int,
    space: str,
    active: int | Sequence[bool] | np.ndarray | None = None,
    store: bool = False,
) -> dict:
    """Nsight Compute's counters for one warp-wide memory instruction on an H200.

    addresses: 32 byte addresses, one per lane (lane i = element i); each a multiple of `width`.
    width: bytes per lane, 1, 2, 4, 8 or 16 (16 = float4 / int4).
    space: "global" or "shared".
    active: the lanes that execute it: a 32-bit mask (bit i = lane i) or 32 booleans; None = all.
    store: a store (st) rather than a load (ld).

    Returns for "global": sectors (l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}) and requests
    (l1tex__t_requests_...); for "shared": wavefronts (l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st})
    and bank_conflicts (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}); plus `ideal` (the
    fewest sectors or wavefronts the active lanes' distinct bytes could take) and `active_lanes`.
    """
    if width not in WIDTHS:
        raise InputError(f"width must be one of {WIDTHS} bytes, got {width!r}")
    if space not in SPACES:
        raise InputError(f"space must be 'global' or 'shared', got {space!r}")
    addr = np.asarray(addresses)
    if addr.shape != (WARP,):
        raise InputError(f"addresses must be {WARP} byte addresses (one per lane), got shape {addr.shape}")
    if not np.issubdtype(addr.dtype, np.integer):
        if not np.all(np.mod(addr, 1) == 0):
            raise InputError("addresses must be integers")
    addr = addr.astype(np.int64)
    act = _as_active(active)
    if np.any(addr[act] < 0):
        raise InputError("addresses must be non-negative")
    bad = act & (addr % width != 0)
    if np.any(bad):
        lane = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"addresses must be aligned to width={width}: lane {lane} has address {int(addr[lane])} "
            "(the hardware faults on a misaligned access)"
        )
    r = analyze_batch(addr[None, :], act[None, :], width, space, store)
    out = {k: int(v[0]) for k, v in r.items()}
    return out


# ----------------------------------------------------------------------------- the rules


def _distinct_per_row(keys: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Number of distinct values of `keys` among `valid` entries, per row (rows x cols)."""
    k = np.where(valid, keys, _BIG)
    k = np.sort(k, axis=1)
    new = np.ones(k.shape, dtype=bool)
    new[:, 1:] = k[:, 1:] != k[:, :-1]
    return np.sum(new & (k != _BIG), axis=1)


def _global(addr: np.ndarray, act: np.ndarray, width: int, store: bool) -> dict:
    any_lane = act.any(axis=1)
    sectors = _distinct_per_row(addr // SECTOR, act)
    requests = any_lane.astype(np.int64)
    nbytes = _distinct_bytes(addr, act, width)
    ideal = -(-nbytes // SECTOR)
    return {"sectors": sectors, "requests": requests, "ideal": ideal, "active_lanes": act.sum(axis=1)}


def _distinct_bytes(addr: np.ndarray, act: np.ndarray, width: int) -> np.ndarray:
    # Lanes are aligned to their width, so two lanes' byte ranges are equal or disjoint.
    return _distinct_per_row(addr, act) * width


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


def _lane_words(addr: np.ndarray, act: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The 4-byte words each lane touches (a 1- or 2-byte access touches one), flattened per row."""
    nw = max(1, width // BANK_BYTES)
    words = (addr // BANK_BYTES)[..., None] + np.arange(nw)
    return words.reshape(*addr.shape[:-1], -1), np.repeat(act, nw, axis=-1)


def _shared(addr: np.ndarray, act: np.ndarray, width: int, store: bool) -> dict:
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
    words, wvalid = _lane_words(a, m, width)
    counts = _bank_counts(words, wvalid)  # (rows * nph, 32)
    ph_active = m.any(axis=1)
    ph_wf = np.where(ph_active, np.maximum(counts.max(axis=1), 1), 0).reshape(rows, nph)
    ph_conf = np.maximum(ph_wf - 1, 0)
    any_lane = act.any(axis=1)
    ideal = np.where(any_lane, np.maximum(1, -(-_distinct_bytes(addr, act, width) // ROW)), 0)
    if store or nph == 1:
        return {"wavefronts": ph_wf.sum(axis=1), "bank_conflicts": ph_conf.sum(axis=1), "ideal": ideal}
    # loads of 8 or 16 bytes: the phase pairs go through as one when the whole warp's lanes come in
    # same-address pairs, either lane i with lane i^1 or lane i with lane i^2 (inactive lanes match anything)
    ng = nph // 2
    glanes = 2 * lanes_per_phase
    ok = np.broadcast_to((_paired(addr, act, 1) | _paired(addr, act, 2))[:, None], (rows, ng))
    ga = addr.reshape(rows * ng, glanes)
    gm = act.reshape(rows * ng, glanes)
    gwords, gvalid = _lane_words(ga, gm, width)
    g_active = gm.any(axis=1).reshape(rows, ng)
    union = np.maximum(_bank_counts(gwords, gvalid).max(axis=1), 1).reshape(rows, ng)
    pw = ph_wf.reshape(rows, ng, 2)
    pc = ph_conf.reshape(rows, ng, 2)
    g_wf = np.where(g_active, np.where(ok, union, pw.sum(axis=2)), 0)
    g_conf = np.where(g_active, np.where(ok, union - 1, pc.sum(axis=2)), 0)
    return {"wavefronts": g_wf.sum(axis=1), "bank_conflicts": g_conf.sum(axis=1), "ideal": ideal}


def _paired(addr: np.ndarray, act: np.ndarray, xor: int) -> np.ndarray:
    """Per row: does every pair of active lanes (i, i ^ xor) ask for one address?"""
    partner = np.arange(WARP) ^ xor
    both = act & act[:, partner]
    return np.all(~both | (addr == addr[:, partner]), axis=1)


def analyze_batch(addr: np.ndarray, act: np.ndarray, width: int, space: str, store: bool = False) -> dict:
    """`analyze_access` for many warps: addr and act are (warps, 32); returns arrays of length warps."""
    addr = np.asarray(addr, dtype=np.int64)
    act = np.asarray(act, dtype=bool)
    if space == "global":
        return _global(addr, act, width, store)
    r = _shared(addr, act, width, store)
    r["active_lanes"] = act.sum(axis=1)
    return r
