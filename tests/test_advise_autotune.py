"""tilewise.advise.autotune as triton.autotune's pruner, on the CPU under the Triton interpreter.

The autotuner itself is the judge: it must time exactly `top_k` configs, the ones the model ranks
first (checked against `rank`, the model's order computed outside triton), and its pick must be one
of them; its output is checked against the float64 product. The fit rules are checked against the
shared-memory and register arithmetic written out here from the GPU's figures.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "autotune"))

import matmul as ex  # noqa: E402
from helpers import assert_close, poisoned  # noqa: E402

from tilewise import gpus  # noqa: E402
from tilewise.advise.autotune import prune_configs_by, rank  # noqa: E402
from tilewise.advise.kernel import describe  # noqa: E402
from tilewise.errors import InputError  # noqa: E402


def _key(c) -> tuple:
    return tuple(sorted(c.all_kwargs().items(), key=lambda kv: kv[0]))


def _timer(log: list):
    def bench(fn, quantiles=None):
        t = time.perf_counter()
        fn()
        ms = (time.perf_counter() - t) * 1e3
        log.append(ms)
        return [ms, ms, ms]

    return bench


@pytest.mark.kernel
@pytest.mark.parametrize("top_k", [2, 3])
@pytest.mark.parametrize("m,n,k", [(33, 40, 48), (7, 127, 64)])
def test_autotune_times_exactly_the_models_top_k(top_k, m, n, k, device):
    a = torch.randn(m, k, dtype=torch.float16, device=device)
    b = torch.randn(k, n, dtype=torch.float16, device=device)
    named = {"a_ptr": a, "b_ptr": b, "c_ptr": None, "M": m, "N": n, "K": k}
    order = [_key(c) for _ms, c in rank(ex.DESC, ex.CONFIGS, named)]
    timed: list = []
    prune = prune_configs_by(ex.DESC, top_k=top_k)
    kern = ex.autotuned(prune=prune, do_bench=_timer(timed))
    out = poisoned((m, n), torch.float16, device)
    ex.matmul(a, b, kern, out=out)
    assert len(timed) == top_k
    assert sorted(map(_key, kern.configs_timings)) == sorted(order[:top_k])
    assert _key(kern.best_config) in order[:top_k]
    ref = a.double() @ b.double()
    assert_close(out, ref, atol=2e-2 * k**0.5, rtol=1e-2)


@pytest.mark.kernel
def test_autotune_top_k_one_times_nothing_and_takes_the_models_first(device):
    m, n, k = 20, 36, 40
    a = torch.randn(m, k, dtype=torch.float16, device=device)
    b = torch.randn(n, k, dtype=torch.float16, device=device).t()  # w.T: layout "nt"
    named = {"a_ptr": a, "b_ptr": b, "M": m, "N": n, "K": k}
    assert ex.DESC.problem(named)["layout"] == "nt"
    first = rank(ex.DESC, ex.CONFIGS, named)[0][1]
    timed: list = []
    kern = ex.autotuned(prune=prune_configs_by(ex.DESC, top_k=1), do_bench=_timer(timed))
    out = poisoned((m, n), torch.float16, device)
    ex.matmul(a, b, kern, out=out)
    assert timed == []
    assert _key(kern.best_config) == _key(first)
    assert_close(out, a.double() @ b.double(), atol=2e-2 * k**0.5, rtol=1e-2)


def _smem(c, e: int) -> int:
    """The pointer GEMM's ring as triton 3.6 allocates it for sm_90: stages (>= 64 rows) or stages - 1 tiles."""
    kw = c.all_kwargs()
    tile = (kw["BLOCK_SIZE_M"] * kw["BLOCK_SIZE_K"] + kw["BLOCK_SIZE_K"] * kw["BLOCK_SIZE_N"]) * e
    st = kw["num_stages"] if kw["BLOCK_SIZE_M"] >= 64 else kw["num_stages"] - 1
    return st * tile


def test_early_config_prune_drops_what_does_not_fit_and_keeps_the_rest():
    g = gpus.get("h200")
    limit = g.smem_per_block_optin - g.reserved_smem_per_block  # 232448 - 1024 B
    cfgs = [
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8},
                      num_warps=8, num_stages=4),  # 4 x 96 KB: over
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
                      num_warps=4, num_stages=3),  # 128 x 256 / 128 threads = 256 accumulator registers
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
                      num_warps=8, num_stages=4),  # 4 x 48 KB = 192 KB, 128 registers: fits
        triton.Config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 256, "GROUP_SIZE_M": 8},
                      num_warps=4, num_stages=4),  # 3 x 136 KB: over
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
                      num_warps=4, num_stages=2),
    ]  # fmt: skip
    a = torch.empty(4096, 4096, dtype=torch.float16)
    named = {"a_ptr": a, "b_ptr": a, "M": 4096, "N": 4096, "K": 4096}
    kept = prune_configs_by(ex.DESC)["early_config_prune"](cfgs, named)
    expect = [
        c for c in cfgs
        if _smem(c, 2) <= limit
        and c.all_kwargs()["BLOCK_SIZE_M"] * c.all_kwargs()["BLOCK_SIZE_N"] / (32 * c.num_warps) <= 160
    ]  # fmt: skip
    assert [_key(c) for c in kept] == [_key(c) for c in expect]
    assert len(kept) == 2


def test_unmapped_meta_parameters_refused_or_kept_unpruned():
    cfgs = [
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "EVEN_K": 1}),
        triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}),
        triton.Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}),
    ]
    a = torch.empty(512, 512, dtype=torch.float16)
    named = {"a_ptr": a, "b_ptr": a, "M": 512, "N": 512, "K": 512}
    with pytest.raises(InputError, match="EVEN_K"):
        prune_configs_by(ex.DESC)["early_config_prune"](cfgs, named)
    keep = prune_configs_by(ex.DESC, top_k=1, unmapped="keep")
    with pytest.warns(UserWarning, match="unpruned"):
        kept = keep["early_config_prune"](cfgs, named)
    assert len(kept) == 3
    est = {i: keep["perf_model"](**named, **c.all_kwargs()) for i, c in enumerate(kept)}
    assert min(est, key=est.get) == 0  # the config the model cannot rank is always timed
    ign = describe("gemm", name="ign", ignore=("EVEN_K",))
    assert len(prune_configs_by(ign)["early_config_prune"](cfgs, named)) == 3


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: describe("conv"), "family must be one of"),
        (lambda: describe("gemm", meta={"BLOCK_Q": "block_q"}), "meta must map to knobs"),
        (lambda: describe("stream"), "needs bytes_per_program"),
        (lambda: prune_configs_by(ex.DESC, top_k=0), "top_k must be an integer >= 1"),
        (lambda: prune_configs_by("gemm"), "desc must be a KernelDescription"),
        (lambda: prune_configs_by(ex.DESC, unmapped="drop"), "unmapped must be"),
        (lambda: ex.DESC.problem({"a_ptr": torch.empty(2, 2), "M": 2, "N": 2}), "argument 'K'"),
        (lambda: ex.DESC.problem({"M": 2, "N": 2, "K": 2}), "the dtype must come from a tensor"),
        (lambda: ex.DESC.config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16}), "must give block_k"),
    ],
)
def test_bad_descriptions_raise_one_line(call, match):
    with pytest.raises(InputError, match=match) as e:
        call()
    assert "\n" not in str(e.value)
