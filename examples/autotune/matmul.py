"""A Triton tutorial-style GEMM tuned by `triton.autotune` with tilewise's model as its pruner.

    python examples/autotune/matmul.py          # on a GPU: exhaustive vs pruned autotune, one shape

The kernel is the output-stationary K loop of Triton's tutorial 03 (grouped tile order, fp32
accumulator, masked edges), written with the tutorial's argument and meta-parameter names, so
`describe("gemm")`'s defaults map it without arguments. `CONFIGS` is a config list of the kind a
kernel author writes (tiles x warps x stages); `autotuned(...)` wraps the kernel in
`triton.autotune` over it, with or without the pruner.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from tilewise.advise.autotune import prune_configs_by
from tilewise.advise.kernel import describe

DESC = describe("gemm", name="examples.autotune.matmul")

# tiles (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps) x stages, group 8: 36 configs
TILES = (
    (32, 64, 64, 4), (64, 64, 64, 4), (64, 128, 64, 4), (128, 64, 64, 4), (128, 128, 64, 4),
    (128, 128, 64, 8), (128, 256, 64, 8), (256, 128, 64, 8), (64, 256, 32, 4), (128, 128, 32, 4),
    (16, 64, 128, 4), (16, 128, 128, 4),
)  # fmt: skip
CONFIGS = [
    triton.Config(
        {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8}, num_warps=w, num_stages=st
    )
    for bm, bn, bk, w in TILES
    for st in (2, 3, 4)
]


@triton.jit
def matmul_kernel(
    # pointers
    a_ptr, b_ptr, c_ptr,
    # sizes
    M, N, K,
    # strides
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    # meta-parameters
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    # grouped order: GROUP_SIZE_M row tiles share the B columns they read while those stay in L2
    group = GROUP_SIZE_M * num_pid_n
    first_m = (pid // group) * GROUP_SIZE_M
    size_m = min(num_pid_m - first_m, GROUP_SIZE_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        k_left = K - k * BLOCK_SIZE_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def autotuned(configs=None, prune: dict | None = None, do_bench=None):
    """`matmul_kernel` under `triton.autotune` over `configs` (default CONFIGS), keyed on M, N, K; `do_bench`
    replaces triton's timer (the interpreter has none)."""
    extra = {"do_bench": do_bench} if do_bench is not None else {}
    return triton.autotune(configs=list(configs or CONFIGS), key=["M", "N", "K"], prune_configs_by=prune, **extra)(
        matmul_kernel
    )


def matmul(a: torch.Tensor, b: torch.Tensor, kernel=None, out: torch.Tensor | None = None) -> torch.Tensor:
    """a [M, K] @ b [K, N] (any strides) with an autotuned `kernel` (default: pruned to the model's top 3)."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"a [M, K] and b [K, N] must agree on K, got {tuple(a.shape)} and {tuple(b.shape)}")
    kernel = kernel or autotuned(prune=prune_configs_by(DESC, top_k=3))
    m, k = a.shape
    n = b.shape[1]
    c = out if out is not None else torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)
    kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    return c


if __name__ == "__main__":
    import time

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    for label, kern in (("exhaustive", autotuned()), ("pruned top-3", autotuned(prune=prune_configs_by(DESC, 3)))):
        t = time.time()
        matmul(a, b, kern)
        torch.cuda.synchronize()
        print(f"{label}: tuned in {time.time() - t:.1f} s, picked {kern.best_config}")


def _make_args(shape):
    m, n, k = shape["M"], shape["N"], shape["K"]
    dt = torch.float16 if shape.get("dtype", "fp16") == "fp16" else torch.bfloat16
    a = torch.randn(m, k, device="cuda", dtype=dt)
    b = torch.randn(k, n, device="cuda", dtype=dt)
    c = torch.empty(m, n, device="cuda", dtype=dt)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)
    args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    return args, grid, {"a_ptr": a, "b_ptr": b, "M": m, "N": n, "K": k}


def _tunable():
    from tilewise.advise.calibrate import Tunable

    shapes = [{"M": m, "N": n, "K": k, "dtype": "fp16", "layout": "nn"}
              for m, n, k in ((512, 4096, 4096), (4096, 4096, 4096), (64, 8192, 4096), (2048, 2048, 512),
                              (8192, 1024, 1024), (16, 4096, 14336), (1024, 11008, 4096), (3000, 3000, 3000))]  # fmt: skip
    return Tunable(DESC, matmul_kernel, CONFIGS, shapes, _make_args)


# `tilewise calibrate examples/autotune/matmul.py:TUNABLE --budget 60 --out matmul.h200.json`
TUNABLE = _tunable()
