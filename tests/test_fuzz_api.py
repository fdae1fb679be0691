"""Property-based fuzzing of the public Python entry points.

`tilewise.explain.<kind>.explain`, `tilewise.occupancy` (= `tilewise.model.occupancy`), `tilewise.gpus.get`
and `tilewise.sim.analyze_access` get arguments of every type a caller might pass: good values,
boundaries, huge, negative and non-integral numbers, None, strings, bools, lists. The properties:
each call returns or raises `InputError` (never another exception), with a one-line message naming
what was expected and what was given; every report's JSON is strict; an occupancy answer obeys the
hardware's four limits (checked against the GPU's figures here). A call past LIMIT_S has hung: the limit
says only that (~50x what the slowest report needs on a loaded 2-core machine).
"""

from __future__ import annotations

import json
import math
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilewise
from tilewise import gpus
from tilewise.errors import InputError
from tilewise.explain import attention, decode, ffn, gemm, moe
from tilewise.sim import analyze_access

# A hang guard, not a speed claim: every entry point answers in well under 0.1 s of CPU; 10 s (of this
# process's CPU time, so other processes' load does not count) only says "it hung or blew up".
LIMIT_S = 10.0
FUZZ = settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

ANY = st.one_of(
    st.integers(min_value=-5, max_value=300),
    st.sampled_from([0, 1, 7, 16, 64, 128, 256, 4096, 10**12, 10**40, 10**310, -(10**20)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([None, True, False, "64", "abc", "", [64], (64, 128), {"m": 1}, 64.0, 64.5]),
)
GPU = st.one_of(st.sampled_from(gpus.names()), st.sampled_from(["h100", "nope", "", None, 3]))
DTYPE = st.sampled_from(["bf16", "fp16", "tf32", "fp8", "int8", "fp32", "x", None, 16])


def call(fn, **kw):
    t = time.process_time()
    try:
        out = fn(**kw)
    except InputError as e:
        msg = str(e)
        assert "\n" not in msg and msg, (fn.__name__, kw, msg)
        assert re.search(r"\bgot\b|expected|must|unknown", msg), (fn.__name__, kw, msg)
        out = None
    took = time.process_time() - t
    assert took <= LIMIT_S, f"{fn.__module__}.{fn.__name__}({kw}) hung: {took:.2f} s"
    return out


def strict_json(report):
    def bad(c):
        raise AssertionError(f"non-strict JSON constant {c!r}")

    text = report.dumps()
    json.loads(text, parse_constant=bad)
    report.render()  # the text renders too


KWARGS = {
    gemm.explain: ["m", "n", "k", "tile", "block_k", "threads", "stages", "registers"],
    attention.explain: [
        "batch",
        "heads",
        "kv_heads",
        "seq_q",
        "seq_k",
        "head_dim",
        "block_m",
        "consumers",
        "block_n",
        "stages",
        "hit_rate",
    ],
    decode.explain: ["batch", "heads", "kv_heads", "seq_len", "head_dim", "block_n", "gemm_k", "gemm_n"],
    moe.explain: ["experts", "tokens", "top_k", "d_model", "d_ff", "heads", "block_m", "block_n", "block_k"],
    ffn.explain: ["tokens", "d_model", "heads", "intermediate", "block_m", "block_n"],
}


@st.composite
def explain_call(draw, fn):
    names = draw(st.lists(st.sampled_from(KWARGS[fn]), unique=True, max_size=3))
    kw = {n: draw(ANY) for n in names}
    if draw(st.booleans()):
        kw["gpu"] = draw(GPU)
    if draw(st.booleans()):
        kw["dtype"] = draw(DTYPE)
    return kw


@pytest.mark.parametrize("fn", list(KWARGS), ids=lambda f: f.__module__.rsplit(".", 1)[-1])
def test_fuzz_explain_api(fn):
    @FUZZ
    @given(explain_call(fn))
    def check(kw):
        r = call(fn, **kw)
        if r is not None:
            strict_json(r)

    check()


@FUZZ
@given(
    gpu=GPU,
    threads=ANY,
    registers=ANY,
    static_smem=ANY,
    dynamic_smem=ANY,
    carveout=st.one_of(st.none(), ANY),
    barriers=ANY,
)
def test_fuzz_occupancy(gpu, threads, registers, static_smem, dynamic_smem, carveout, barriers):
    o = call(
        tilewise.occupancy,
        gpu=gpu,
        threads=threads,
        registers=registers,
        static_smem=static_smem,
        dynamic_smem=dynamic_smem,
        carveout=carveout,
        barriers=barriers,
    )
    if o is not None:
        json.dumps(o.to_dict(), allow_nan=False)
        check_occupancy_limits(o, gpus.get(gpu), int(threads), int(registers), int(static_smem) + int(dynamic_smem))


def check_occupancy_limits(o, g, threads, registers, smem):
    """The answer against the hardware's limits, from the GPU's own figures (not the model's code):
    resident blocks fit the SM's warps, registers (allocated per warp in units), shared memory (with the
    driver's reserve per block) and block slots, and occupancy is resident warps over the SM's warps."""
    b = o.blocks_per_sm
    warps = -(-threads // g.warp_size)
    assert 0 <= b <= g.max_blocks_per_sm
    assert b * warps <= g.max_warps_per_sm
    regs_per_warp = -(-(registers * g.warp_size) // g.reg_alloc_unit) * g.reg_alloc_unit
    assert b * warps * regs_per_warp <= g.regs_per_sm
    if smem:
        assert b * (smem + g.reserved_smem_per_block) <= g.smem_per_sm
    assert o.occupancy == pytest.approx(b * warps / g.max_warps_per_sm)


@pytest.mark.parametrize("gpu", gpus.names())
@pytest.mark.parametrize(
    "threads, registers, smem", [(256, 64, 0), (128, 32, 48 * 1024), (1024, 255, 0), (96, 168, 100_000)]
)
def test_occupancy_obeys_the_limits_on_every_gpu(gpu, threads, registers, smem):
    g = gpus.get(gpu)
    if smem > g.smem_per_block_optin:
        return
    o = tilewise.occupancy(gpu, threads=threads, registers=registers, dynamic_smem=smem)
    check_occupancy_limits(o, g, threads, registers, smem)
    # and it is the largest such count: one more block breaks a limit
    b = o.blocks_per_sm + 1
    warps = -(-threads // g.warp_size)
    regs_per_warp = -(-(registers * g.warp_size) // g.reg_alloc_unit) * g.reg_alloc_unit
    smem_sm = g.smem_per_sm  # the largest carveout, which the runtime picks when shared memory binds
    assert (
        b > g.max_blocks_per_sm
        or b * warps > g.max_warps_per_sm
        or b * warps * regs_per_warp > g.regs_per_sm
        or (smem and b * (smem + g.reserved_smem_per_block) > smem_sm)
    ), (gpu, o.to_dict())


@settings(FUZZ, max_examples=40)
@given(name=st.one_of(GPU, st.text(max_size=12)))
def test_fuzz_gpus_get(name):
    g = call(gpus.get, name=name)
    if g is not None:
        json.dumps(g.to_dict(), allow_nan=False)


ADDR = st.one_of(
    st.lists(st.integers(min_value=-8, max_value=1 << 20).map(lambda a: a * 4), min_size=32, max_size=32),
    st.lists(st.integers(min_value=0, max_value=1 << 40), min_size=0, max_size=40),
    st.lists(st.floats(allow_nan=True), min_size=32, max_size=32),
    st.sampled_from([None, "abc", 5, [], [10**30] * 32]),
)


@FUZZ
@given(
    addresses=ADDR,
    width=st.sampled_from([1, 2, 4, 8, 16, 3, 0, -4, 32, 4.0, "4", None]),
    space=st.sampled_from(["global", "shared", "local", "", None]),
    store=st.booleans(),
    atomic=st.sampled_from([False, True, "cas", "loop", "x"]),
)
def test_fuzz_analyze_access(addresses, width, space, store, atomic):
    d = call(analyze_access, addresses=addresses, width=width, space=space, store=store, atomic=atomic)
    if d is not None:
        json.dumps(d, allow_nan=False, default=lambda o: o.item() if hasattr(o, "item") else str(o))
        for v in d.values():
            if isinstance(v, float):
                assert math.isfinite(v)


def test_analyze_access_ragged_addresses():
    with pytest.raises(InputError):
        analyze_access([[1, 2], [3]], 4, "global")
