"""tilewise.kernels.matmul on the GPU at full size: bf16, fp16, fp32 (TF32), every code path.

`make gpu-test` on the device machine. The fp32 product of the same inputs, in full fp32 (TF32 off
for the test, restored after), is the reference (a float64 GEMM of 8192^3 would take minutes); every
element of the output is checked against it, so a few wrong rows cannot hide in a norm.
"""

from __future__ import annotations

import math

import pytest
from helpers import assert_close, poisoned

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from matmul_reference import matmul_reference  # noqa: E402

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels.gemm import Config, choose_config, matmul  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("no_tf32")]
BF, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32
# Output rounding, relative: 2 u with u = 2^-8 (bf16) and 2^-11 (fp16); fp32 keeps the accumulator's.
RTOL = {BF: 2.0**-7, FP16: 2.0**-10, FP32: 0.0}


def atol(dtype, k: int) -> float:
    """The absolute part of the element-wise bound |c - ref| <= atol + RTOL |ref| (a, b ~ N(0, 1)).

    bf16/fp16 inputs are exact in fp32, so the kernel's fp32 sum differs from the reference's only in
    the order of the K additions: errors of a few K x 2^-24 (16 K 2^-24 = 0.008 at K = 8192, against
    |c| ~ sqrt(K) = 90). fp32 inputs are rounded to TF32 by the kernel (10 mantissa bits, truncated on
    Hopper: each product off by up to ~2^-9, either sign), so the sum is off by a std of about
    sqrt(K) 2^-11 (0.04 at K = 8192); 16 sqrt(K) 2^-11 (0.7) keeps 67M elements free of false alarms
    while a wrong element (off by ~|c|) still fails.
    """
    if dtype == FP32:
        return 16 * math.sqrt(k) * 2.0**-11
    return 16 * k * 2.0**-24 + 1e-6


def _check(m, n, k, dtype, cfg=None, trans_a=False, trans_b=False, bias=False, activation="none"):
    a = torch.randn(k, m, device="cuda", dtype=dtype).t() if trans_a else torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype).t() if trans_b else torch.randn(k, n, device="cuda", dtype=dtype)
    bb = torch.randn(n, device="cuda", dtype=dtype) if bias else None
    c = poisoned((m, n), dtype, "cuda")
    matmul(a, b, out=c, bias=bb, activation=activation, config=cfg)
    ref = matmul_reference(a, b, bb, activation)
    assert_close(c, ref, atol=atol(dtype, k), rtol=RTOL[dtype], what=f"C {m}x{n}x{k} {dtype}")
    again = matmul(a, b, bias=bb, activation=activation, config=cfg)
    assert torch.equal(again, c), "a second call differs: split-K counters not reset or the order is not fixed"


@pytest.mark.parametrize("dtype", [BF, FP16])
@pytest.mark.parametrize(
    "m,n,k",
    [(8192, 8192, 8192), (64, 24576, 8192), (1, 24576, 8192), (16, 24576, 8192), (128, 24576, 8192),
     (256, 24576, 8192), (1024, 24576, 8192), (3000, 5000, 700), (48, 11008, 4096), (333, 7777, 2049),
     (1, 1, 1), (7, 13, 70), (127, 129, 7), (4000, 4000, 64)],
)  # fmt: skip
def test_default_config(m, n, k, dtype):
    _check(m, n, k, dtype)


@pytest.mark.parametrize("m,n,k", [(1000, 1000, 1000), (4096, 4096, 4096), (64, 24576, 8192), (777, 555, 333)])
def test_tf32(m, n, k):
    _check(m, n, k, FP32)


@pytest.mark.parametrize(
    "cfg",
    [Config(128, 256, 64, 8, 1, 8, 3, True), Config(128, 128, 64, 8, 1, 8, 4, True), Config(64, 128, 128, 8, 4, 4, 4),
     Config(128, 256, 64, 8, 1, 8, 3, True, "", True), Config(128, 256, 64, 8, 1, 4, 3, True, "", True),
     Config(16, 64, 256, 8, 2, 4, 4), Config(128, 128, 64, 8, 3, 8, 3)],
    ids=lambda c: c.tag(),
)  # fmt: skip
@pytest.mark.parametrize("m,n,k", [(2048, 2048, 2048), (3000, 5000, 704), (513, 1025, 257)])
def test_every_path(cfg, m, n, k):
    _check(m, n, k, BF, cfg)


@pytest.mark.parametrize("trans_a,trans_b", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype", [BF, FP32])
def test_non_contiguous(trans_a, trans_b, dtype):
    _check(1111, 2222, 3333, dtype, trans_a=trans_a, trans_b=trans_b)


@pytest.mark.parametrize("activation", ["none", "relu", "gelu", "silu"])
@pytest.mark.parametrize("persistent", [False, True])
def test_epilogue(activation, persistent):
    cfg = choose_config(2048, 2048, 1024, "bf16")
    import dataclasses

    _check(2048, 2048, 1024, BF, dataclasses.replace(cfg, persistent=persistent), bias=True, activation=activation)


def test_bad_inputs_on_gpu():
    a = torch.randn(4, 5, device="cuda")
    with pytest.raises(InputError, match="same device"):
        matmul(a, torch.randn(5, 3))
    with pytest.raises(InputError, match="inner dimensions"):
        matmul(a, torch.randn(4, 3, device="cuda"))
