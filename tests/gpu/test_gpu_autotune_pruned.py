"""The pruner's picks on the GPU are correct: kernels tilewise did not write, tuned by triton.autotune with
`prune_configs_by`, checked against float64 on awkward shapes (poisoned outputs).

Run on the device: PYTHONPATH=src pytest -m gpu tests/gpu/test_gpu_autotune_pruned.py
(Liger-Kernel's case needs the liger-kernel package, FlagGems' flag-gems; each skips without it.)
"""

from __future__ import annotations

import importlib
import os
import sys

import pytest
from helpers import assert_close

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "autotune"))

from tilewise.advise.autotune import prune_configs_by, rank  # noqa: E402
from tilewise.advise.kernel import describe  # noqa: E402

pytestmark = pytest.mark.gpu
SHAPES = [(1, 7, 127), (127, 1000, 64), (1000, 333, 4096), (4096, 4096, 1024)]


def _inductor_configs():
    from torch._inductor.template_heuristics.triton import CUDAConfigHeuristic

    out, seen = [], set()
    for g in CUDAConfigHeuristic().mm_configs:
        key = (g.block_m, g.block_n, g.block_k, g.num_stages, g.num_warps, getattr(g, "group_m", 8))
        if key not in seen:
            seen.add(key)
            meta = {"BLOCK_SIZE_M": key[0], "BLOCK_SIZE_N": key[1], "BLOCK_SIZE_K": key[2], "GROUP_SIZE_M": key[5]}
            out.append(triton.Config(meta, num_stages=key[3], num_warps=key[4]))
    return out


@pytest.mark.parametrize("top_k", [1, 3])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_inductor_configs_on_the_tutorial_gemm(m, n, k, top_k):
    import matmul as ex

    cfgs = _inductor_configs()
    kern = ex.autotuned(cfgs, prune=prune_configs_by(ex.DESC, top_k=top_k))
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    ex.matmul(a, b, kern, out=out)
    named = {"a_ptr": a, "b_ptr": b, "M": m, "N": n, "K": k}
    top = [str(c) for _ms, c in rank(ex.DESC, cfgs, named)[:top_k]]
    assert str(kern.best_config) in top
    assert_close(out, a.double() @ b.double(), atol=1e-2 * k**0.5, rtol=1e-2)


@pytest.mark.parametrize("rows,cols", [(1, 7), (37, 1000), (4096, 4096), (3, 11008)])
def test_liger_dyt_forward_pruned(rows, cols):
    dyt = pytest.importorskip("liger_kernel.ops.dyt")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    import autotune_external as X

    desc = describe("stream", name="liger_kernel.dyt_fwd", meta={"BLOCK_N": "block_n"}, dtype_from="X",
                    bytes_per_program=X.dyt_bytes, programs=X.dyt_programs,
                    elements_per_program=lambda a, k: k["BLOCK_N"])  # fmt: skip
    jit = X.unwrap_jit(dyt._dyt_fwd_kernel)
    kern = triton.autotune(configs=list(dyt._dyt_fwd_kernel.configs), key=["N"],
                           prune_configs_by=prune_configs_by(desc, top_k=3))(jit)  # fmt: skip
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32)
    alpha = torch.tensor([0.7], device="cuda")
    gamma, beta = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
    y = torch.full_like(x, float("nan"))
    kern[lambda m: (triton.cdiv(cols, m["BLOCK_N"]), rows)](x, y, alpha, gamma, beta, True, cols)
    ref = torch.tanh(0.7 * x.double()) * gamma.double() + beta.double()
    assert_close(y, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_flaggems_mm_pruned(m, n, k):
    pytest.importorskip("flag_gems")
    fg = importlib.import_module("flag_gems.ops.mm")
    from flag_gems import runtime

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    import autotune_external as X

    desc = describe("gemm", name="flag_gems.mm_kernel_general", fixed={"group_m": 8})
    jit = X.unwrap_jit(fg.mm_kernel_general)
    kern = triton.autotune(configs=list(runtime.get_tuned_config("mm")), key=["M", "N", "K"],
                           prune_configs_by=prune_configs_by(desc, top_k=3))(jit)  # fmt: skip
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)  # noqa: E731
    kern[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
               GROUP_M=8)  # fmt: skip
    assert_close(c, a.double() @ b.double(), atol=1e-2 * k**0.5, rtol=1e-2)
