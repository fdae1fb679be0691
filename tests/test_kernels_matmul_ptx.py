"""The pointer GEMM's stores and K-remainder loads are 16-byte vectors at N, K not multiples of 16 (sm_90 PTX).

Triton specializes an integer argument only when it divides by 16, so a mask `rn < N` with a plain
N = 5000 is not provably uniform over 8 columns and the store is split into 2-byte pieces: on the H200
3000 x 5000 x 128 bf16 ran at 0.24x cuBLAS (81.5 us against 19.5, 30 MB written at 0.37 TB/s). The
launcher passes M, N and K as quotient x power of two. This test builds the launcher's own plan for
CPU tensors, compiles it for GPUTarget("cuda", 90, 128) with the JIT's own specialization rule
(`native_specialize_impl`: no GPU needed, the wheel carries ptxas) and counts the PTX's global stores
and loads. It runs in a subprocess without TRITON_INTERPRET (under the interpreter `triton.jit`
builds interpreted functions, which do not compile).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = r"""
import json, re, sys
import torch
from triton._C.libtriton import native_specialize_impl
from triton.backends.compiler import BaseBackend, GPUTarget
from triton.compiler import ASTSource, compile
from tilewise.kernels import gemm

DT = {"bf16": (torch.bfloat16, "bf16"), "fp16": (torch.float16, "fp16"), "fp32": (torch.float32, "fp32")}

def ptx_counts(m, n, k, dtype, layout, cfg):
    dt, name = DT[dtype]
    a = torch.empty(m, k, dtype=dt)
    b = torch.empty(n, k, dtype=dt).t() if layout == "nt" else torch.empty(k, n, dtype=dt)
    c = torch.empty(m, n, dtype=dt)
    plan = gemm._make_plan(a, b, c, None, "none", gemm.Config(**cfg))
    fn = plan.launcher.kernel
    ptrs = {"a_ptr": name, "b_ptr": name, "c_ptr": name, "bias_ptr": name,
            "ws_ptr": "fp32" if plan.ws_numel else name, "counter_ptr": "i32" if plan.ws_numel else name}
    ints = dict(zip([p for p in fn.arg_names if p not in ptrs and p not in plan.launcher.consts], plan.ints))
    sig, consts, attrs = {}, {}, {}
    for i, p in enumerate(fn.arg_names):
        if p in ptrs:
            sig[p], attrs[(i,)] = "*" + ptrs[p], [["tt.divisibility", 16]]  # torch allocations are aligned
        elif p in plan.launcher.consts:
            sig[p], consts[(i,)] = "constexpr", plan.launcher.consts[p]
        else:
            ty, key = native_specialize_impl(BaseBackend, ints[p], False, True, True)
            if ty == "constexpr":
                sig[p], consts[(i,)] = "constexpr", ints[p]
            else:
                sig[p] = ty
                if key == "D":
                    attrs[(i,)] = [["tt.divisibility", 16]]
    kern = compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                   target=GPUTarget("cuda", 90, 128), options=plan.launcher.options)
    ptx = kern.asm["ptx"]
    count = {}
    for op in re.findall(r"\b(?:st|ld)\.global[\w.]*", ptx):
        count[op] = count.get(op, 0) + 1
    return count

cases = json.loads(sys.argv[1])
print(json.dumps([ptx_counts(*case) for case in cases]))
"""

T64 = dict(block_m=64, block_n=128, block_k=64, num_warps=4, num_stages=3)
CASES = {
    "3000x5000x128 bf16 nt": (3000, 5000, 128, "bf16", "nt", T64),
    "1000^3 fp16 nt": (1000, 1000, 1000, "fp16", "nt", T64),
    "1000^3 bf16 nn 128x256": (1000, 1000, 1000, "bf16", "nn", dict(T64, block_m=128, block_n=256, num_warps=8)),
    "100^3 bf16 nn": (
        100,
        100,
        100,
        "bf16",
        "nn",
        dict(block_m=16, block_n=128, block_k=128, num_warps=4, num_stages=3),
    ),
    "split-K 4 at N 5000": (64, 5000, 4096, "bf16", "nt", dict(T64, block_n=64, num_stages=4, split_k=4)),
}


@pytest.fixture(scope="module")
def counts():
    try:
        import triton.backends.nvidia  # noqa: F401
    except ImportError:
        pytest.skip("triton has no CUDA backend here")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.path.join(ROOT, "src") + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(list(CASES.values()))],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    return dict(zip(CASES, json.loads(res.stdout.strip().splitlines()[-1])))


def _stores(c: dict) -> dict:
    """The output stores (the split-K workspace's are st.global.cg)."""
    return {op: v for op, v in c.items() if op.startswith("st.global") and ".cg" not in op}


@pytest.mark.parametrize("case", ["3000x5000x128 bf16 nt", "1000^3 fp16 nt", "1000^3 bf16 nn 128x256"])
def test_output_stores_are_16_byte_vectors(counts, case):
    st = _stores(counts[case])
    assert st and set(st) == {"st.global.v4.b32"}, st


def test_n_100_stores_8_byte_vectors(counts):
    st = _stores(counts["100^3 bf16 nn"])  # 100 = 4 x 25: 8 bytes is the widest aligned vector
    assert st and set(st) == {"st.global.v2.b32"}, st


def test_split_k_fixup_store_is_vectorized(counts):
    st = _stores(counts["split-K 4 at N 5000"])
    assert st and set(st) == {"st.global.v4.b32"}, st


@pytest.mark.parametrize("case", ["1000^3 fp16 nt", "100^3 bf16 nn"])
def test_k_remainder_loads_are_vectors(counts, case):
    """K = 1000 and 100 are not multiples of BLOCK_K: the masked last step loads vectors too."""
    c = counts[case]
    assert not any(op.startswith("ld.global") and op.endswith((".b16", ".u16")) for op in c), c
