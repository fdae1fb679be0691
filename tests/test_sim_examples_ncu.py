"""End to end: the examples' launch totals in the simulator against Nsight Compute's for their CUDA twins.

tests/data/ncu/make_examples_fixture.py compiles the examples' kernels (shared arrays volatile, so one
instruction per source access, as the simulator counts) and profiles one launch of each on the H200.
"""

import importlib.util
import json
import os

import numpy as np
import pytest

from tilewise.sim import launch

HERE = os.path.dirname(__file__)
EX = os.path.join(HERE, "..", "examples", "sim")
FIXTURE = os.path.join(HERE, "data", "ncu", "ncu_examples.json")

CASES = {
    "gemm_tiled": ("gemm_tiled", "gemm", (4, 4), (32, 32)),
    "gemm_naive": ("gemm_naive", "gemm_naive", (4, 4), (32, 32)),
    "block_sum": ("block_sum", "block_sum", (8,), (256,)),
    "transpose_naive": ("transpose", "transpose_naive", (4, 4), (32, 8)),
    "transpose_padded": ("transpose", "transpose_padded", (4, 4), (32, 8)),
    "transpose_swizzled": ("transpose", "transpose_swizzled", (4, 4), (32, 8)),
}


def _totals(trace):
    t = dict.fromkeys(
        ("g_ld_sectors", "g_ld_requests", "g_st_sectors", "g_st_requests", "s_ld_wf", "s_st_wf", "s_ld_bc", "s_st_bc"),
        0,
    )
    for s in trace.sites.values():
        c = s.counts
        if s.space == "global":
            t[f"g_{s.op}_sectors"] += c["sectors"]
            t[f"g_{s.op}_requests"] += c["requests"]
        else:
            t[f"s_{s.op}_wf"] += c["wavefronts"]
            t[f"s_{s.op}_bc"] += c["bank_conflicts"]
    return t


def _ncu(m):
    k = "l1tex__t_{}_pipe_lsu_mem_global_op_{}.sum"
    w = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{}.sum"
    b = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{}.sum"
    return {
        "g_ld_sectors": m[k.format("sectors", "ld")],
        "g_ld_requests": m[k.format("requests", "ld")],
        "g_st_sectors": m[k.format("sectors", "st")],
        "g_st_requests": m[k.format("requests", "st")],
        "s_ld_wf": m[w.format("ld")],
        "s_st_wf": m[w.format("st")],
        "s_ld_bc": m[b.format("ld")],
        "s_st_bc": m[b.format("st")],
    }


def _fixture() -> dict:
    # a missing fixture fails: make_examples_fixture.py on the H200 makes it
    assert os.path.exists(FIXTURE), f"{FIXTURE} is missing: run tests/data/ncu/make_examples_fixture.py on the GPU"
    with open(FIXTURE) as f:
        return json.load(f)


def test_fixture_has_every_case():
    assert set(CASES) <= set(_fixture()["kernels"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_totals_equal_nsight_compute(name):
    fx = _fixture()
    mod_name, kname, grid, block = CASES[name]
    spec = importlib.util.spec_from_file_location(f"ncu_{mod_name}", os.path.join(EX, mod_name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    g3 = tuple(grid) + (1,) * (3 - len(grid))
    b3 = tuple(block) + (1,) * (3 - len(block))
    args = mod.setup(g3, b3, np.random.default_rng(0))
    t = launch(getattr(mod, kname), grid, block, *args, hazards=False)
    assert _totals(t) == _ncu(fx["kernels"][name]["metrics"])
