"""analyze_access against Nsight Compute on an H200 (tests/data/ncu/, made by make_fixture.py there)."""

import glob
import json
import os

import numpy as np
import pytest
from helpers import assert_close

from tilewise.errors import InputError
from tilewise.sim import analyze_access

DATA = os.path.join(os.path.dirname(__file__), "data", "ncu")
FILES = sorted(glob.glob(os.path.join(DATA, "ncu_access_round*.json")))


def _records():
    out = []
    for f in FILES:
        with open(f) as fh:
            d = json.load(fh)
        for p in d["patterns"]:
            out.append((os.path.basename(f), p))
    return out


RECORDS = [r for r in _records() if r[1]["op"] in ("ld", "st")]  # round 5 (atomics): test_sim_atomics.py


def _measured(p):
    m, op = p["metrics"], p["op"]
    if p["space"] == "global":
        return {
            "sectors": m[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"],
            "requests": m[f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"],
        }
    return {
        "wavefronts": m[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"],
        "bank_conflicts": m[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"],
    }


def test_fixture_is_big_enough():
    assert RECORDS, "no Nsight Compute fixture in tests/data/ncu"
    assert len(RECORDS) >= 150
    kinds = {(p["space"], p["op"], p["width"]) for _, p in RECORDS}
    assert len(kinds) == 20  # 2 spaces x 2 ops x 5 widths
    assert any(p["mask"] != 0xFFFFFFFF for _, p in RECORDS)


def test_equals_nsight_compute_on_every_pattern():
    bad = []
    for f, p in RECORDS:
        got = analyze_access(p["offsets"], p["width"], p["space"], active=p["mask"], store=p["op"] == "st")
        want = _measured(p)
        if any(got[k] != v for k, v in want.items()):
            row = (f, p["id"], p["space"], p["op"], p["width"], p["name"], hex(p["mask"]), want)
            bad.append((*row, {k: got[k] for k in want}))
    assert not bad, f"{len(bad)} of {len(RECORDS)} patterns differ, e.g.:\n" + "\n".join(map(str, bad[:15]))


def test_round4_was_a_test_of_the_pairing_rule():
    """Round 4 was made after the 8/16-byte load rule had been fitted to rounds 1-3; it must hold patterns
    on both sides of it (phase pairs merged and split) and many that the rule of round 2 (every 2 or 4
    lanes asking for few addresses) gets wrong, or it would not have tested anything."""
    r4 = [p for f, p in RECORDS if f == "ncu_access_round4.json"]
    assert len(r4) >= 1400
    loads = [p for p in r4 if p["space"] == "shared" and p["op"] == "ld" and p["width"] >= 8]
    merged = split = old_wrong = 0
    for p in loads:
        offs, act = np.array(p["offsets"]), (p["mask"] >> np.arange(32)) & 1 == 1
        pairs = [np.all(~(act & act[np.arange(32) ^ x]) | (offs == offs[np.arange(32) ^ x])) for x in (1, 2)]
        merged += any(pairs)
        split += not any(pairs)
        seg, most = (4, 2) if p["width"] == 8 else (2, 1)
        a = np.where(act, offs, -1).reshape(-1, seg)
        old = all(len(set(r[r >= 0])) <= most for r in a)
        old_wrong += old != any(pairs)
    assert merged >= 300 and split >= 300 and old_wrong >= 100, (merged, split, old_wrong)


def test_every_full_warp_pattern_every_store_and_all_global_are_exact():
    n = 0
    for f, p in RECORDS:
        if p["mask"] == 0xFFFFFFFF or p["op"] == "st" or p["space"] == "global" or p["width"] <= 4:
            got = analyze_access(p["offsets"], p["width"], p["space"], active=p["mask"], store=p["op"] == "st")
            assert all(got[k] == v for k, v in _measured(p).items()), (f, p["id"], p["name"])
            n += 1
    assert n > 800


# ----------------------------------------------------------------------------- the textbook statements


def test_seed_statements():
    lanes = np.arange(32)
    # 32 threads reading 128 consecutive bytes: one request, 4 sectors
    r = analyze_access(lanes * 4, 4, "global")
    assert (r["requests"], r["sectors"]) == (1, 4)
    # each thread one row apart: 32 sectors
    assert analyze_access(lanes * 4096, 4, "global")["sectors"] == 32
    # 32 different banks: one pass
    assert analyze_access(lanes * 4, 4, "shared")["wavefronts"] == 1
    # all the same address: a broadcast, one pass
    assert analyze_access(np.zeros(32, int), 4, "shared")["wavefronts"] == 1
    # same bank, different addresses: they queue up, 32 times
    r = analyze_access(lanes * 128, 4, "shared")
    assert r["wavefronts"] == 32 and r["bank_conflicts"] == 31


def test_masks_and_inputs():
    lanes = np.arange(32)
    assert analyze_access(lanes * 128, 4, "global", active=0x1)["sectors"] == 1
    assert analyze_access(lanes * 128, 4, "global", active=[i < 4 for i in range(32)])["sectors"] == 4
    with pytest.raises(InputError, match="width"):
        analyze_access(lanes * 4, 3, "global")
    with pytest.raises(InputError, match="space"):
        analyze_access(lanes * 4, 4, "local")
    with pytest.raises(InputError, match="32 byte addresses"):
        analyze_access(lanes[:16] * 4, 4, "shared")
    with pytest.raises(InputError, match="aligned"):
        analyze_access(lanes * 4 + 2, 4, "shared")
    with pytest.raises(InputError, match="mask"):
        analyze_access(lanes * 4, 4, "shared", active=1 << 32)


def test_batch_equals_single_and_is_translation_invariant(rng):
    from tilewise.sim import analyze_batch

    for space in ("global", "shared"):
        for w in (1, 2, 4, 8, 16):
            for store in (False, True):
                addr = rng.integers(0, 2048 // w, (6, 32)) * w
                act = rng.random((6, 32)) < 0.7
                b = analyze_batch(addr, act, w, space, store)
                for r in range(6):
                    one = analyze_access(addr[r], w, space, active=act[r], store=store)
                    moved = analyze_access(addr[r] + 1024 * 37, w, space, active=act[r], store=store)
                    for k in b:
                        assert one[k] == b[k][r] == moved[k], (space, w, store, k)


def test_shared_passes_add_up_to_the_counts():
    """`shared_passes` spells the rule out pass by pass; on every measured shared pattern its passes'
    wavefronts add up to analyze_access's, and the conflicts to wavefronts minus one per pass."""
    from tilewise.sim import shared_passes

    n = 0
    for _, p in RECORDS:
        if p["space"] != "shared":
            continue
        st = p["op"] == "st"
        got = analyze_access(p["offsets"], p["width"], "shared", active=p["mask"], store=st)
        sp = shared_passes(p["offsets"], p["width"], active=p["mask"], store=st)
        assert sum(x["wavefronts"] for x in sp["passes"]) == got["wavefronts"], (p["id"], p["name"])
        assert got["bank_conflicts"] == got["wavefronts"] - len(sp["passes"]), (p["id"], p["name"])
        n += 1
    assert n > 2000
    lanes = np.arange(32)
    # a 16-byte broadcast: every lane pairs with lane i^1; two passes of 16 lanes, one wavefront each
    sp = shared_passes(np.zeros(32, int), 16)
    assert sp["pairing"] == "i^1" and [len(x["lanes"]) for x in sp["passes"]] == [16, 16]
    # a contiguous 16-byte load pairs with nobody: four quarter-warps
    sp = shared_passes(lanes * 16, 16)
    assert sp["phase_lanes"] == 8 and sp["pairing"] is None and len(sp["passes"]) == 4
    # stores never pair
    assert shared_passes(np.zeros(32, int), 16, store=True)["pairing"] is None


def test_trace_reports_the_phase_pairing_of_16_byte_loads():
    """Through the executor and the report: float4 shared loads that pair (broadcast, or two lanes per
    address) go two phases at a time; a contiguous float4 row pairs nobody and takes 4 wavefronts."""
    from tilewise.sim import float32, kernel, launch, shared, syncthreads, threadIdx, vec
    from tilewise.sim.report import report

    @kernel
    def k(out):
        s = shared(512, float32)
        tid = threadIdx.x
        s[tid] = tid * 1.0
        s[tid + 256] = tid * 2.0
        syncthreads()
        v4 = vec(s, 4)
        a = v4[tid % 128]  # contiguous float4s: 16 lanes x 16 B per half-warp, no pairing
        b = v4[0]  # a broadcast: every lane pairs with i^1
        c = v4[tid // 2]  # two lanes per float4: pairs by i^1
        out[tid] = a.x + b.y + c.z

    out = np.zeros(256, np.float32)
    t = launch(k, 1, 256, out)
    s = np.arange(512, dtype=np.float32)
    s[:256], s[256:] = np.arange(256) * 1.0, np.arange(256) * 2.0
    tid = np.arange(256)
    assert_close(out, s[4 * (tid % 128)] + s[1] + s[4 * (tid // 2) + 2], atol=0, what="out")
    loads = {x["access"]: x for x in report(t)["lines"] if x["op"] == "ld" and x["bytes_per_lane"] == 16}
    a, b, c = (
        next(v for key, v in loads.items() if key.startswith(p)) for p in ("v4[tid % 128]", "v4[0]", "v4[tid // 2]")
    )
    assert (a["phases_paired"], a["wavefronts_per_inst"]) == (0, 4.0) and "no lane pairing" in a["verdict"]
    assert (b["phases_paired"], b["wavefronts_per_inst"]) == (8, 2.0) and "two at a time" in b["verdict"]
    assert (c["phases_paired"], c["wavefronts_per_inst"]) == (8, 2.0)


def test_shared_passes_refuses_bad_input():
    from tilewise.sim import shared_passes

    lanes = np.arange(32)
    with pytest.raises(InputError, match="width must be one of"):
        shared_passes(lanes * 4, 3)
    with pytest.raises(InputError, match="32 byte addresses"):
        shared_passes(lanes[:8] * 4, 4)
    with pytest.raises(InputError, match="aligned to width=16: lane 1"):
        shared_passes(lanes * 8, 16)
    with pytest.raises(InputError, match="non-negative"):
        shared_passes(lanes * 4 - 8, 4)
    with pytest.raises(InputError, match="integers"):
        shared_passes(np.array(["a"] * 32), 4)
    with pytest.raises(InputError, match="mask"):
        shared_passes(lanes * 4, 4, active=1 << 40)
