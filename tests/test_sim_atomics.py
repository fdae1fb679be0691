"""Atomics (atom / red) in analyze_access and the executor, against Nsight Compute on an H200.

The fixture is round 5 of tests/data/ncu/make_fixture.py (one warp, one atom / red instruction per launch, 508
patterns); any ncu_*round*.json file there whose records are atomics is read, so its name does not matter.
Which rule a pattern takes (one instruction, ATOMS.CAS, or the LDS + ATOMS.CAST loop) is read from the SASS
the fixture recorded for its kernel.

Exclusions (3 of 508, listed in NOT_MODELLED): three global `red` patterns over wide random windows, where
Nsight Compute counted 1 or 2 sectors more than the rule (and L2 saw the extra sectors too); no lane-order,
line, set or sector-count rule found explains them without breaking the other 251 global patterns.
"""

import glob
import json
import os

import numpy as np
import pytest
from helpers import assert_close, poisoned

from tilewise.errors import InputError
from tilewise.sim import (
    analyze_access,
    analyze_batch,
    atomic_add,
    blockDim,
    blockIdx,
    float32,
    int32,
    kernel,
    launch,
    shared,
    threadIdx,
)
from tilewise.sim import syncthreads as _sync

DATA = os.path.join(os.path.dirname(__file__), "data", "ncu")

# (round-5 id, what it is, measured sectors, the rule's): the rule gives the lower figure
NOT_MODELLED = {
    463: ("global red.add.u64, random 1 KB window, 27 lanes", 22, 21),
    470: ("global red.add.u32, random 4 KB window, 32 lanes", 28, 26),
    471: ("global red.add.u64, random 4 KB window, 32 lanes", 31, 30),
}


def _records():
    out = []
    for f in sorted(glob.glob(os.path.join(DATA, "ncu_*round*.json"))):
        with open(f) as fh:
            d = json.load(fh)
        sass = d.get("sass", {})
        for p in d["patterns"]:
            if p["op"] not in ("ld", "st"):
                out.append((os.path.basename(f), p, sass.get(p["kernel"].split("(")[0], "")))
    return out


RECORDS = _records()


def test_the_atomics_fixture_is_there():
    # a missing or emptied fixture must fail, not turn the tests below into silent passes
    assert any(f == "ncu_access_round5.json" for f, _, _ in RECORDS), (
        f"no atomic patterns in {DATA}/ncu_*round*.json: restore ncu_access_round5.json (make_fixture.py --round 5)"
    )
    assert len(RECORDS) >= 508


def _kind(p, sass):
    """The `atomic=` of a pattern, from its kernel's SASS."""
    if p["space"] == "shared" and "ATOMS.CAST" in sass:
        return "loop"
    if p["space"] == "shared" and "ATOMS.CAS " in sass + " ":
        return "cas"
    return True


def _op(p):
    """ATOMG is filed under op_atom, REDG (a red, or an atom whose result is unused) under op_red."""
    return "red" if p["metrics"]["smsp__sass_inst_executed_op_global_red.sum"] else "atom"


def _measured(p, kind):
    """The counters of the atomic instruction (not the harness's STG of an atom's result)."""
    m = p["metrics"]
    if p["space"] == "global":
        op = _op(p)
        return {k: m[f"l1tex__t_{k}_pipe_lsu_mem_global_op_{op}.sum"] for k in ("sectors", "requests")}
    want = {
        "wavefronts": m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"],
        "bank_conflicts": m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum"],
    }
    if kind == "loop":
        want["passes"] = m["smsp__sass_inst_executed_op_shared_atom.sum"]
        want["ld_wavefronts"] = m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
        want["ld_bank_conflicts"] = m["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
    return want


def test_equals_nsight_compute_on_every_modelled_atomic_pattern():
    bad, seen, off = [], 0, {}
    for f, p, sass in RECORDS:
        kind = _kind(p, sass)
        got = analyze_access(p["offsets"], p["width"], p["space"], active=p["mask"], atomic=kind)
        want = _measured(p, kind)
        got = {k: got[k] for k in want}
        if f.endswith("round5.json") and p["id"] in NOT_MODELLED:
            off[p["id"]] = (want["sectors"], got["sectors"])
            continue
        seen += 1
        if got != want:
            bad.append((f, p["id"], p["space"], p["op"], p["width"], p["name"], hex(p["mask"]), want, got))
    assert not bad, f"{len(bad)} of {seen} patterns differ, e.g.:\n" + "\n".join(map(str, bad[:15]))
    assert seen == len(RECORDS) - len(NOT_MODELLED)  # round 5: 508 measured, 3 not modelled
    assert off == {i: v[1:] for i, v in NOT_MODELLED.items()}  # still off, by the amounts documented


def test_batch_equals_one_by_one():
    groups = {}
    for _, p, sass in RECORDS:
        kind = _kind(p, sass)
        groups.setdefault((p["space"], p["width"], kind), []).append(p)
    for (space, width, kind), ps in groups.items():
        addr = np.array([p["offsets"] for p in ps])
        act = np.array([[(p["mask"] >> i) & 1 == 1 for i in range(32)] for p in ps])
        r = analyze_batch(addr, act, width, space, atomic=kind)
        for j, p in enumerate(ps):
            one = analyze_access(p["offsets"], width, space, active=p["mask"], atomic=kind)
            assert {k: int(v[j]) for k, v in r.items()} == one


def test_red_and_atom_count_alike_under_their_own_counter():
    kinds = {}
    for _, p, _ in RECORDS:
        if p["space"] == "global":
            m = p["metrics"]
            other = "atom" if _op(p) == "red" else "red"
            assert m[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{other}.sum"] == 0
            kinds.setdefault(p["op"], set()).add(_op(p))
    # an atom whose result nobody reads is compiled to REDG and counted as a red
    assert kinds == {k: {"red"} if k in ("red", "redf", "atomu") else {"atom"} for k in kinds}


def test_l2_sees_two_sectors_per_l1_sector_but_at_4kb_strides():
    odd = []
    for _, p, _ in RECORDS:
        if p["space"] != "global":
            continue
        m, op = p["metrics"], _op(p)
        l1, l2 = m[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"], m[f"lts__t_sectors_op_{op}.sum"]
        if l2 != 2 * l1:
            odd.append((p["name"], l1, l2))
    assert odd == [("stride4096B", 32, 48)] * 4  # L2 address hashing: not modelled


# ----------------------------------------------------------------------------- hand-made facts


def test_same_address_lanes_serialize_where_a_store_merges():
    zero = [0] * 32
    assert analyze_access(zero, 4, "global", atomic=True)["sectors"] == 32
    assert analyze_access(zero, 4, "global", store=True)["sectors"] == 1
    r = analyze_access(zero, 4, "shared", atomic=True)
    assert (r["wavefronts"], r["bank_conflicts"]) == (32, 31)
    assert analyze_access(zero, 4, "shared", store=True)["wavefronts"] == 1
    # one lane (a warp-aggregated atomic, or block_sum's final atomicAdd from thread 0): one of everything
    one = analyze_access(zero, 4, "global", active=1, atomic=True)
    assert (one["sectors"], one["requests"], one["ideal"]) == (1, 1, 1)
    # 32 distinct words: the store's figures (4 sectors; 1 wavefront)
    i4 = [4 * i for i in range(32)]
    assert analyze_access(i4, 4, "global", atomic=True)["sectors"] == 4
    assert analyze_access(i4, 4, "shared", atomic=True)["wavefronts"] == 1
    # lanes on different words of one sector go together; on one bank they do not
    assert analyze_access([4 * (i % 8) for i in range(32)], 4, "global", atomic=True)["sectors"] == 4
    assert analyze_access([128 * (i % 8) for i in range(32)], 4, "shared", atomic=True)["wavefronts"] == 32


def test_shared_float_add_cas_loop():
    # 32 lanes on one float: 32 passes of LDS (broadcast, 1 wavefront) + ATOMS.CAST (2 wavefronts)
    r = analyze_access([0] * 32, 4, "shared", atomic="loop")
    assert (r["passes"], r["wavefronts"], r["bank_conflicts"], r["ld_wavefronts"]) == (32, 64, 0, 32)
    # distinct words in one bank: one lane per bank per pass, so 32 passes too
    r = analyze_access([128 * i for i in range(32)], 4, "shared", atomic="loop")
    assert (r["passes"], r["wavefronts"]) == (32, 64)
    # 8-byte lanes: each half-warp is a phase of 2 wavefronts
    r = analyze_access([8 * i for i in range(32)], 8, "shared", atomic="loop")
    assert (r["passes"], r["wavefronts"], r["ld_wavefronts"]) == (1, 4, 2)


def test_bad_atomic_kind():
    with pytest.raises(InputError, match="atomic must be"):
        analyze_access([0] * 32, 4, "shared", atomic="add")
    with pytest.raises(InputError, match="loop"):
        analyze_access([0] * 32, 4, "global", atomic="loop")


# ----------------------------------------------------------------------------- the executor


@kernel
def k_atomics(g):
    s = shared(64, int32)
    i = blockIdx.x * blockDim.x + threadIdx.x
    s[threadIdx.x] = 0
    _sync()
    atomic_add(s, threadIdx.x % 8, 1)  # 4 lanes per word, 8 banks
    atomic_add(s, threadIdx.x * 32 % 64, 1)  # two words of bank 0, 16 lanes each
    atomic_add(g, i // 4, 1)  # 4 lanes per word, one sector
    atomic_add(g, i * 8 % 64, 1)  # a word per 32-byte sector, 4 lanes on each
    _sync()
    g[64 + i] = s[threadIdx.x]


def test_executor_counts_atomics_with_the_atomic_rule():
    g = np.zeros(128, dtype=np.int32)
    t = launch(k_atomics, 1, 64, g)
    i = np.arange(64)
    want_values = np.bincount(i // 4, minlength=64) + np.bincount(i * 8 % 64, minlength=64)
    np.testing.assert_array_equal(g[:64], want_values)
    np.testing.assert_array_equal(g[64:], np.bincount(i % 8, minlength=64) + np.bincount(i * 32 % 64, minlength=64))
    sites = sorted((s for s in t.sites.values() if s.op == "atom"), key=lambda s: s.line)
    assert [s.space for s in sites] == ["shared", "shared", "global", "global"]
    # per warp: 4 wavefronts (4 lanes a bank); 32 (32 lanes in bank 0); 4 sectors (one sector, 4 lanes on each
    # address); 32 sectors (8 sectors, 4 lanes on each address). A store would take 1, 2, 1 and 8.
    got = [(s.counts["wavefronts"], s.counts["bank_conflicts"]) for s in sites[:2]]
    got += [(s.counts["sectors"], s.counts["requests"]) for s in sites[2:]]
    assert got == [(8, 6), (64, 62), (8, 2), (64, 2)]
    for s, idx in zip(sites, (i % 8, i * 32 % 64, i // 4, i * 8 % 64)):
        keys = ("wavefronts", "bank_conflicts") if s.space == "shared" else ("sectors", "requests")
        want = dict.fromkeys(keys, 0)
        for w in range(2):
            r = analyze_access(idx[32 * w : 32 * w + 32] * 4, 4, s.space, atomic=True)
            for k in keys:
                want[k] += r[k]
        assert {k: s.counts[k] for k in keys} == want, (s.text, s.counts)


@kernel
def k_block_sum_atomic(x, out, n):
    """block_sum's ending: thread 0 of each block adds the block's partial sum to one global total."""
    s = shared(256, float32)
    tid = threadIdx.x
    i = blockIdx.x * blockDim.x + tid
    s[tid] = x[i] if i < n else 0.0
    _sync()
    stride = blockDim.x // 2
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        _sync()
        stride >>= 1
    if tid == 0:
        atomic_add(out, 0, s[0])


def test_block_sum_final_atomic_is_one_sector_per_block(rng):
    x = rng.standard_normal(8 * 256).astype(np.float32)
    out = np.full(1, 0.0, dtype=np.float32)
    t = launch(k_block_sum_atomic, 8, 256, x, out, len(x), hazards=False)
    assert_close(out[0], x.astype(np.float64).sum(), atol=1e-3, rtol=1e-4, what="sum")
    (s,) = [s for s in t.sites.values() if s.op == "atom"]
    assert (s.space, s.counts["inst"], s.counts["sectors"], s.counts["requests"]) == ("global", 8, 8, 8)


@kernel
def k_shared_float_add(x, out):
    acc = shared(4, float32)
    t = threadIdx.x
    if t < 4:
        acc[t] = 0.0
    _sync()
    atomic_add(acc, t % 4, x[t])  # 8 lanes per word per warp, four banks
    _sync()
    if t < 4:
        out[t] = acc[t]


def test_executor_counts_a_shared_float_add_as_its_cas_loop(rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = poisoned(4, np.float32)
    t = launch(k_shared_float_add, 1, 64, x, out)
    assert_close(out, x.astype(np.float64).reshape(16, 4).sum(axis=0), atol=1e-5, rtol=1e-5, what="sums")
    line = next(s.line for s in t.sites.values() if s.op == "atom")
    at = {s.op: s.counts for s in t.sites.values() if s.line == line}
    # per warp: 8 passes (one lane per bank each); ATOMS.CAST 2 wavefronts a pass; the LDS 1 (4 banks).
    # The atomic's site: one instruction per warp, as for every site; the LDS site: one per pass.
    assert (at["atom"]["inst"], at["atom"]["wavefronts"], at["atom"]["bank_conflicts"]) == (2, 32, 0)
    assert (at["ld"]["inst"], at["ld"]["wavefronts"], at["ld"]["bank_conflicts"]) == (16, 16, 0)
    assert at["ld"]["lanes"] == 2 * sum(range(4, 36, 4))  # 32, 28, ..., 4 pending lanes a warp


def test_report_names_atomics_as_atomics():
    """The per-line report: an atomic site is judged as an atomic (no 'broadcast'), its sectors are counted apart."""
    from tilewise.sim import atomic_add, blockDim, blockIdx, float32, kernel, launch, shared, syncthreads, threadIdx
    from tilewise.sim.report import report

    @kernel
    def count(out, hist):
        s = shared(32, float32)
        tid = threadIdx.x
        if tid < 32:
            s[tid] = 0.0
        syncthreads()
        atomic_add(s, 0, 1.0)  # every thread on one shared word: a CAS loop, one pass per lane
        atomic_add(hist, blockIdx.x * blockDim.x * 0, 1)  # every thread of the grid on one global word
        syncthreads()
        if tid == 0:
            out[blockIdx.x] = s[0]

    out = poisoned(2, np.float32)
    hist = np.zeros(4, np.int32)
    t = launch(count, 2, 64, out, hist)
    assert out.tolist() == [64.0, 64.0] and hist[0] == 128
    r = report(t)
    atoms = [x for x in r["lines"] if x["op"] == "atom"]
    assert atoms and all(x["verdict"].startswith("atomic") for x in atoms)
    assert not any("broadcast" in x["verdict"] for x in atoms)
    # 2 blocks x 2 warps, 32 lanes on one word each: 32 sectors per instruction
    assert r["totals"]["global_atom_sectors"] == 4 * 32
