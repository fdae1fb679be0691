"""Property-based fuzz of every documented public function of the Python API.

The functions are the ones docs/ and the README call (the GPU registry, `tilewise.model`'s modules,
`tilewise.model.traffic`'s counts, `predict`, `advise`, `util.cdiv`). Each example calls one with good
arguments, some of them replaced by what a caller might pass by mistake: 0, negatives, huge and
non-integral numbers, NaN and infinity, bools, strings (a 100 KB one too), None, lists. The properties:

* the call returns or raises `InputError`: never another exception (a KeyError, ZeroDivisionError,
  AttributeError or OverflowError from deep inside is a bug);
* a refusal is one line naming what was expected and what was given, and never echoes a long
  argument whole;
* what it returns is strict JSON once turned into data (no NaN, no infinity);
* it finishes (a call taking longer than HUNG_S has hung: the limit says only that, it is ~100x
  what the slowest call here needs).

Right answers are checked for the counts and peaks against formulas written out here
(`test_counts_against_formulas`), separately from the fuzz.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import re
import signal
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilewise import advise as tw_advise
from tilewise import gpus, util
from tilewise.errors import InputError

# tilewise.model re-exports occupancy() and predict() under their modules' names: import the modules themselves
decode, latency, mma, occupancy, pipeline, predict, roofline, tensorcore, traffic, waves = (
    importlib.import_module(f"tilewise.model.{m}")
    for m in (
        "decode",
        "latency",
        "mma",
        "occupancy",
        "pipeline",
        "predict",
        "roofline",
        "tensorcore",
        "traffic",
        "waves",
    )
)

HUNG_S = 10.0  # the slowest call fuzzed here (advise over a GEMM space) takes ~0.1 s on a loaded 2-core machine

FUZZ = settings(
    max_examples=100,  # x 72 functions: ~7,000 calls, ~10 s on one core
    deadline=None,  # no per-example wall-clock limit: a loaded CI machine is slow, not wrong
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

BAD = st.one_of(
    st.sampled_from([0, -1, -64, 1, 7, 10**12, 10**40, 10**5000, -(10**20)]),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.5, 64.5, 64.0, 1e308, -0.0]),
    st.sampled_from([None, True, False, "64", "abc", "", "x" * 100_000, "h200", "bf16", [64], (64, 128), {"m": 1}]),
)

# A good value for every required parameter, by name; parameters with a default start from it.
GOOD = {
    "a": 5, "b": 3, "batch": 4, "block_k": 64, "block_m": 64, "block_n": 128, "blocks": 192, "d_ff": 768,
    "d_model": 2048, "design": "pingpong", "experts_used": 8, "flops": 1e12, "hbm_bytes": 1e9, "head_dim": 128,
    "heads": 16, "hit_rate": 0.5, "intensity": 100.0, "intermediate": 512, "k": 4096, "kv_blocks": 64,
    "kv_heads": 8, "latency": 600.0, "load": 1000.0, "m": 64, "mma": 1024.0, "n": 128, "nbytes": 1e9,
    "numel": 1000, "p": 2.0, "readers": 4, "requested_bytes": 1e9, "rows": 16, "rows_per_expert": [64, 32, 0],
    "seq_len": 4096, "seq_lens": [128, 256], "sk": 128, "sq": 128, "sms": 132, "softmax": 512.0, "splits": 4,
    "stage_bytes": 65536, "stages": 2, "threads": 256, "registers": 64, "throughput": 2.0, "tile": 3,
    "tokens": 4096, "top_k": 8, "total_tiles": 100, "program": 1, "programs": 4, "warps": 4, "gpu": "h100-sxm",
    "dtype": "bf16", "level": "hbm", "name": "h200", "warps_per_sm": 8, "carveout": 50, "static_smem": 0,
    "dynamic_smem": 4096,
}  # fmt: skip
GEMM_PROBLEM = {"m": 64, "n": 256, "k": 128}
GEMM_CONFIG = {"block_m": 64, "block_n": 64, "block_k": 64}

FUNCTIONS = [
    gpus.get, gpus.peak_flops, gpus.bandwidth, gpus.balance, gpus.tensor_flops_per_cycle_per_sm, gpus.dtype_name,
    gpus.element_bytes,
    roofline.time, roofline.time_levels, roofline.machine_balance, roofline.hit_rate_for_compute_roof,
    roofline.ideal_hit_rate, roofline.kv_tile_intensity, roofline.l2_reuse, roofline.effective_hbm_bytes,
    tensorcore.wgmma, tensorcore.sm_flops_per_cycle, tensorcore.smem_feed, tensorcore.feed_table,
    tensorcore.register_budget, tensorcore.setmaxnreg_split, tensorcore.smem_budget, tensorcore.attention_tile_budget,
    latency.littles_law, latency.warps_to_hide_issue, latency.warps_to_hide_memory, latency.async_in_flight,
    pipeline.simulate, pipeline.compare, pipeline.attention_tile_times, pipeline.predict_kernel_designs,
    waves.grid_waves, waves.persistent_schedule, waves.persistent_tiles, waves.tile_cost, waves.grouped_schedule,
    waves.grouped_gemm_cost,
    decode.fragment_fill, decode.choose_num_splits, decode.decode_gemm_point, decode.decode_gemm_roofline,
    decode.batch_for_compute_bound, decode.decode_attention,
    occupancy.occupancy, occupancy.carveout_bytes, occupancy.registers_per_warp, occupancy.smem_per_block, mma.path, mma.warp_feed, mma.instruction_feed, mma.tmem_budget,
    util.cdiv, util.next_power_of_2,
    *[f for n, f in inspect.getmembers(traffic, inspect.isfunction)
      if not n.startswith("_") and f.__module__ == traffic.__name__ and n != "check_dims"],
]  # fmt: skip
NEEDS = {  # arguments a function needs beyond GOOD's by-name values
    predict.predict: {"kernel": "gemm", "problem": GEMM_PROBLEM, "config": GEMM_CONFIG, "gpu": "h200"},
    tw_advise.advise: {"kernel": "gemm", "problem": GEMM_PROBLEM, "gpu": "h200", "top_k": 3},
    mma.instruction_feed: {"gpu": "b200"},
    mma.warp_feed: {"gpu": "a100-sxm"},
    tensorcore.wgmma: {"n": 128},
}
FUNCTIONS += [predict.predict, tw_advise.advise]
MAY_BE_NONE = {decode.batch_for_compute_bound}  # None: no batch makes this GEMM compute-bound


def good_kwargs(fn) -> dict:
    kw = {}
    needs = NEEDS.get(fn, {})
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in needs:
            kw[p.name] = needs[p.name]
        elif p.default is not inspect.Parameter.empty:
            kw[p.name] = p.default
        elif p.name in GOOD:
            kw[p.name] = GOOD[p.name]
        else:  # pragma: no cover - a new function: add its parameter to GOOD
            raise AssertionError(f"{fn.__qualname__}: no good value for {p.name}")
    return kw


def data(v, depth=0):
    """What a caller serialises: to_dict() where there is one, dataclasses as dicts, containers walked."""
    if depth > 8:
        return str(v)
    if hasattr(v, "to_dict"):
        return data(v.to_dict(), depth + 1)
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return data(dataclasses.asdict(v), depth + 1)
    if isinstance(v, dict):
        return {str(k): data(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [data(x, depth + 1) for x in v]
    return v


class Hung(BaseException):
    pass


def call(fn, kw):
    """Call fn(**kw): its result, or None after a clean InputError. Anything else fails the test."""
    armed = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if armed:

        def fire(*_):
            raise Hung

        old = signal.signal(signal.SIGALRM, fire)
        signal.setitimer(signal.ITIMER_REAL, HUNG_S)
    try:
        return fn(**kw)
    except InputError as e:
        msg = str(e)
        assert msg and "\n" not in msg, (fn.__qualname__, msg)
        assert re.search(r"\bgot\b|expected|must|unknown|needs|has no", msg), (fn.__qualname__, msg)
        assert len(msg) < 2_000, (fn.__qualname__, f"message of {len(msg)} characters")  # long values cut
        return None
    except Hung:
        pytest.fail(f"{fn.__module__}.{fn.__qualname__} did not return within {HUNG_S} s")
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def strict(value, where) -> None:
    def refuse(c):
        raise AssertionError(f"{where}: non-strict JSON constant {c}")

    text = json.dumps(data(value), default=str)  # allow_nan=True here so the check below names the value
    json.loads(text, parse_constant=refuse)


@st.composite
def mutated(draw, fn):
    kw = good_kwargs(fn)
    names = [n for n in kw if n != "gpu" or fn is not gpus.get]
    for n in draw(st.lists(st.sampled_from(sorted(names or ["_"])), unique=True, max_size=2)):
        if n in kw:
            kw[n] = draw(BAD)
    return kw


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f"{f.__module__.rsplit('.', 1)[-1]}.{f.__name__}")
def test_fuzz_public_function(fn):
    @FUZZ
    @given(mutated(fn))
    def check(kw):
        out = call(fn, kw)
        if out is not None:
            strict(out, f"{fn.__qualname__}({kw})")

    check()
    out = call(fn, good_kwargs(fn))  # the good arguments alone give an answer
    assert out is not None or fn in MAY_BE_NONE, fn.__qualname__
    strict(out, fn.__qualname__)


# --------------------------------------------------------------- right answers, counted here


@pytest.mark.parametrize("name", gpus.names())
def test_peaks_by_name_equal_the_datasheet_product(name):
    g = gpus.get(name)
    for dt, macs in g.dense_macs_per_tc_per_cycle.items():
        want = 2 * macs * g.tensor_cores_per_sm * g.sms * g.tensor_clock_mhz * 1e6
        assert gpus.peak_flops(name, dt) == pytest.approx(want, rel=1e-12)
        assert gpus.peak_flops(g, dt) == gpus.peak_flops(name, dt)
    assert gpus.bandwidth(name, "hbm") == g.hbm_bytes_per_s
    assert gpus.balance(name) == pytest.approx(gpus.peak_flops(g) / g.hbm_bytes_per_s)


@settings(FUZZ, max_examples=60)
@given(m=st.integers(0, 10**6), n=st.integers(0, 10**6), k=st.integers(0, 10**6))
def test_counts_against_formulas(m, n, k):
    assert traffic.gemm_flops(m, n, k) == 2 * m * n * k
    assert traffic.gemm_bytes(m, n, k, "fp16") == 2 * (m * k + k * n + m * n)
    assert traffic.gemm_flops(float(m), n, k) == 2 * m * n * k  # an integral float is the same size
    if n:
        assert util.cdiv(m, n) == math.ceil(m / n) if m < 2**50 else True
        assert waves.persistent_tiles(m % 1000, n % 7 + 1, 0) == list(range(0, m % 1000, n % 7 + 1))


@pytest.mark.parametrize(
    "call_, needle",
    [
        (lambda: traffic.gemm_flops(-1, 2, 3), "m must be an integer >= 0, got -1"),
        (lambda: traffic.gemm_flops(1.5, 2, 3), "m must be an integer from 0 to"),
        (lambda: traffic.gemm_flops(True, 2, 3), "got True"),
        (lambda: gpus.peak_flops("h200", clock_mhz=math.nan), "clock_mhz must be a finite number"),
        (lambda: gpus.peak_flops("h200", clock_mhz=math.inf), "clock_mhz must be a finite number"),
        (lambda: gpus.bandwidth("h200", "dram"), "level must be one of hbm, l2, smem, got 'dram'"),
        (lambda: util.cdiv(5, 0), "cdiv's divisor must be an integer >= 1, got 0"),
        (lambda: waves.persistent_tiles(100, 4, 7), "program must be an integer <= 3, got 7"),
        (lambda: predict.predict("gemm", {"m": 64}, GEMM_CONFIG), "gemm problem needs n, k"),
        (lambda: predict.predict("gemm", GEMM_PROBLEM, {**GEMM_CONFIG, "block_m": 0}), "block_m must be an integer"),
        (lambda: predict.predict("gemm", GEMM_PROBLEM, {**GEMM_CONFIG, "num_warps": 0}), "num_warps must be"),
        (lambda: predict.predict("gemm", GEMM_PROBLEM, {**GEMM_CONFIG, "split_k": 0}), "split_k must be"),
        (lambda: predict.predict("gemm", GEMM_PROBLEM, {**GEMM_CONFIG, "num_stages": 100}), "num_stages must be"),
        (lambda: predict.predict("gemm", GEMM_PROBLEM, {**GEMM_CONFIG, "num_stage": 3}), "unknown keys ['num_stage']"),
        (lambda: traffic.gemm_flops(10**5000, 1, 1), "got a 5001-digit number"),
    ],
)
def test_api_refusals_name_the_argument(call_, needle):
    with pytest.raises(InputError) as e:
        call_()
    assert needle in str(e.value)


def test_registry_names_work_wherever_a_gpu_is_taken():
    for fn in (gpus.peak_flops, gpus.balance, gpus.tensor_flops_per_cycle_per_sm):
        assert fn("h200") == fn(gpus.get("h200"))
    assert gpus.bandwidth("h200", "smem") == gpus.bandwidth(gpus.get("h200"), "smem")


def test_moe_accepts_every_dtype_spelling_the_advisor_does():
    # the one dtype table: 'half' is fp16 for the composed models as for the advisor
    p = {"tokens": 4096, "d_model": 2048, "d_ff": 768, "experts": 128, "top_k": 8}
    half = predict.predict("moe", {**p, "dtype": "half"}, {}, "h200").ms
    assert half == predict.predict("moe", {**p, "dtype": "fp16"}, {}, "h200").ms
    assert tw_advise.advise("gemm", {**GEMM_PROBLEM, "dtype": "half"}, "h200")[0].prediction.ms > 0
