"""A warp's 32 addresses: sectors and banks (`tilewise.sim.analyze_access`)."""

from __future__ import annotations

from typing import Any

from tilewise import sim
from tilewise.errors import InputError
from tilewise.sim import access
from tilewise.sim.memory import GLOBAL_BASE
from tilewise.web import measured
from tilewise.web.lane_expr import lane_indices
from tilewise.web.params import Params
from tilewise.web.registry import panel

ACCESS_PRESETS = {
    "contiguous": ("lane", "32 threads read consecutive elements: one request, the fewest sectors"),
    "strided": ("lane * 1024", "each thread one row (1024 elements) apart: a sector per lane"),
    "column": ("lane * 32", "a column of a 32 x 32 tile: in shared memory every lane hits the same bank"),
    "padded": ("lane * 33", "the same column with each row padded to 33 elements: 32 different banks"),
    "swizzled": ("lane * 32 + (lane ^ 1)", "column 1 of a 32 x 32 tile stored at row * 32 + (col ^ row)"),
    "broadcast": ("0", "every lane reads the same element: a broadcast"),
}
ACTIVE_MASKS = {"all": 0xFFFFFFFF, "half": 0x0000FFFF, "even": 0x55555555, "one": 0x00000001}


@panel(
    "access",
    "A warp's 32 addresses: sectors and banks",
    ("space", "width", "preset", "expr", "active", "store", "atomic"),
)
def access_panel(p: Params) -> dict[str, Any]:
    """`tilewise.sim.analyze_access` on the 32 addresses an index expression gives.

    The counts (sectors and requests, or wavefronts and bank conflicts) are the simulator's,
    which equal Nsight Compute's on an H200. The per-lane sector and bank numbers only place
    each lane in the drawing: a sector is 32 bytes of address space, a bank the 4-byte word
    index modulo 32, the access module's own constants.
    """

    space = p.choice("space", "global", access.SPACES)
    width = int(p.choice("width", "4", tuple(str(w) for w in access.WIDTHS)))
    preset = p.choice("preset", "contiguous", (*ACCESS_PRESETS, "custom"))
    if preset == "custom" or p.has("expr"):
        expr = p.values.get("expr", "lane")
        preset = "custom"
    else:
        expr = ACCESS_PRESETS[preset][0]
    mask_name = p.choice("active", "all", tuple(ACTIVE_MASKS))
    store = p.choice("store", "0", ("0", "1", "false", "true")) in ("1", "true")
    atomic = p.choice("atomic", "0", ("0", "1", "false", "true")) in ("1", "true")
    if atomic and store:
        raise InputError("pick one operation: store=1 or atomic=1, not both")
    idx = lane_indices(expr, access.WARP)
    base = GLOBAL_BASE if space == "global" else 0
    addresses = [base + i * width for i in idx]
    mask = ACTIVE_MASKS[mask_name]
    counts = sim.analyze_access(addresses, width, space, active=mask, store=store, atomic=atomic)
    lanes: list[dict[str, Any]] = []
    for lane, a in enumerate(addresses):
        words = range(a // access.BANK_BYTES, (a + width - 1) // access.BANK_BYTES + 1)
        lanes.append(
            {
                "lane": lane,
                "index": idx[lane],
                "address": a,
                "offset": a - base,
                "active": bool(mask >> lane & 1),
                "sector": (a - base) // access.SECTOR,
                "words": list(words),
                "banks": sorted({w % access.BANKS for w in words}),
            }
        )
    # For the drawing only: what each bank is asked for (distinct words) and which sectors are touched.
    # The counts above are the simulator's; these lists just say where to draw each lane's line.
    bank_words: dict[int, set[int]] = {}
    for ln in lanes:
        if ln["active"]:
            for w in ln["words"]:
                bank_words.setdefault(w % access.BANKS, set()).add(w)
    sectors = sorted({ln["sector"] for ln in lanes if ln["active"]})
    passes = sim.shared_passes(addresses, width, active=mask, store=store) if space == "shared" and not atomic else None
    return {
        "passes": passes,
        "space": space,
        "width": width,
        "preset": preset,
        "bank_words": [len(bank_words.get(b, ())) for b in range(access.BANKS)],
        "sectors": sectors,
        "expr": expr,
        "active": mask_name,
        "store": store,
        "atomic": atomic,
        "counts": counts,
        # Nsight Compute's counters for the pattern this access equals (same byte offsets, width,
        # mask and operation), from the committed H200 fixture; None where no pattern equals it.
        "measured": measured.access(
            space, "atom" if atomic else "st" if store else "ld", width, mask, [a - base for a in addresses]
        ),
        "lanes": lanes,
        "presets": {k: {"expr": v[0], "about": v[1]} for k, v in ACCESS_PRESETS.items()},
        "sector_bytes": access.SECTOR,
        "banks": access.BANKS,
        "bank_bytes": access.BANK_BYTES,
    }
