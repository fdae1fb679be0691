"""tilewise.kernels.sum on the CPU under the Triton interpreter (TRITON_INTERPRET=1).

Float64 sums are the spec; fp16 and fp32 here (bf16 on the GPU, tests/gpu/test_gpu_sum.py).
"""

from __future__ import annotations

import pytest
from helpers import assert_close, kernel_device

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels import sum as public_sum  # noqa: E402
from tilewise.kernels.reduce import SumConfig  # noqa: E402
from tilewise.kernels.reduce import sum as tsum  # noqa: E402

pytestmark = pytest.mark.kernel
DEV = kernel_device()
# Pinned small: 3 programs of 256-element steps, so the interpreter's loop, the ragged tail and
# the last-program fix-up all run on a few thousand elements.
SMALL = SumConfig(block=256, programs_per_sm=1, num_warps=4)


def tol(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """fp32 accumulation error grows like sqrt(n) x eps x sum|x|; the result is rounded to x's dtype."""
    n = x.numel()
    acc = 2.0**-23 * (n**0.5 + 2) * x.double().abs().sum()
    out = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24, torch.float64: 0}[x.dtype]
    return acc + out * ref.abs() + 1e-12


@pytest.fixture(autouse=True)
def _poison_allocations(poison):
    """The result and the fp32 partials start poisoned: a program that skips its write shows up."""
    poison(torch, "empty", "empty_strided")


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("numel", [1, 7, 127, 1000, 5000])
def test_sum_all(numel, dtype):
    x = torch.randn(numel, device=DEV).to(dtype)
    s = tsum(x, config=SMALL)
    ref = x.double().sum()
    assert s.shape == () and s.dtype == dtype
    assert_close(s, ref, atol=tol(x, ref), what="sum")


def test_sum_all_default_config_and_repeat():
    x = torch.randn(3, 1001, device=DEV)
    s1 = public_sum(x)
    s2 = public_sum(x)  # the completion counter must have been reset; the order is fixed
    assert torch.equal(s1, s2)
    ref = x.double().sum()
    assert_close(s1, ref, atol=tol(x, ref), what="sum")


def test_sum_fp16_accumulates_in_fp32():
    # An fp16 accumulator stops at 2048 (2048 + 1 rounds back to 2048); 5000 is exact in fp16.
    x = torch.ones(5000, dtype=torch.float16, device=DEV)
    assert tsum(x, config=SMALL).item() == 5000.0


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize(
    "shape,dim", [((127, 33), 0), ((127, 33), 1), ((5, 37, 9), 1), ((5, 37, 9), -1), ((7, 3, 20), 0)]
)
def test_sum_dim(shape, dim, dtype):
    x = torch.randn(*shape, device=DEV).to(dtype)
    s = tsum(x, dim)
    ref = x.double().sum(dim)
    assert s.shape == ref.shape and s.dtype == dtype
    assert_close(s, ref, atol=tol(x, ref), what="sum")


@pytest.mark.parametrize("shape,dim", [((4096, 8), 0), ((3, 2000, 5), 1)])
def test_sum_dim_split_r_second_pass(shape, dim):
    """Few output columns, long R: R is split over programs and a second pass adds the fp32 partials."""
    x = torch.randn(*shape, device=DEV)
    s = tsum(x, dim)
    ref = x.double().sum(dim)
    assert_close(s, ref, atol=tol(x, ref), what="sum")


def test_sum_keepdim():
    x = torch.randn(4, 6, device=DEV)
    assert tsum(x, 1, keepdim=True).shape == (4, 1)


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_sum_non_contiguous(dim):
    base = torch.randn(40, 60, device=DEV)
    x = base.t()[:, ::3]  # [60, 14], strides (1, 180)
    s = tsum(x, dim) if dim is not None else tsum(x, config=SMALL)
    ref = x.double().sum() if dim is None else x.double().sum(dim)
    assert_close(s, ref, atol=tol(x, ref), what="sum")


@pytest.mark.parametrize(
    "x,dim,match",
    [
        (lambda: torch.zeros(0, device=DEV), None, r"must not be empty"),
        (
            lambda: torch.ones(3, dtype=torch.int32, device=DEV),
            None,
            r"float16, bfloat16, float32 or float64, got torch.int32",
        ),
        (lambda: torch.ones(3, 4, device=DEV), 2, r"dim must be in \[-2, 1\] for a 2-D tensor, got 2"),
        (lambda: torch.ones(3, 4, device=DEV), (0, 1), r"dim must be an int or None"),
        (lambda: [1.0, 2.0], None, r"x must be a torch.Tensor, got list"),
    ],
)
def test_sum_bad_inputs(x, dim, match):
    with pytest.raises(InputError, match=match):
        tsum(x(), dim)
