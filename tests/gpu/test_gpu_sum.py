"""tilewise.kernels.sum on the GPU at full size (1 GiB fp32, bf16/fp16 with fp32 accumulation)."""

from __future__ import annotations

import pytest
from helpers import assert_close

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels.reduce import sum as tsum  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("numel", [256 * 2**20, 10**8 + 7, 1, 4097])
def test_sum_all(numel, dtype):
    x = torch.rand(numel, device="cuda").to(dtype)  # positive: no cancellation, a relative bound holds
    s = tsum(x)
    ref = x.double().sum()
    out_eps = {torch.float32: 2**-23, torch.bfloat16: 2**-7, torch.float16: 2**-10}[dtype]
    if ref.item() > torch.finfo(dtype).max:  # fp16 tops out at 65504: the sum is inf, as torch.sum's is
        assert torch.isinf(s) and torch.isinf(x.sum())
        return
    assert_close(s, ref, atol=0, rtol=1e-5 + out_eps, what="sum")
    assert torch.equal(tsum(x), s), "a second call differs"


def test_sum_fp16_accumulates_in_fp32():
    assert tsum(torch.ones(5000, dtype=torch.float16, device="cuda")).item() == 5000.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    "shape,dim", [((32768, 8192), 0), ((32768, 8192), 1), ((64, 1000, 33), 1), ((3, 5, 100003), -1)]
)
def test_sum_dim(shape, dim, dtype):
    x = torch.randn(*shape, device="cuda").to(dtype)
    s = tsum(x, dim)
    ref = x.double().sum(dim)
    out_eps = {torch.float32: 1e-6, torch.bfloat16: 2**-7}[dtype]
    assert_close(s, ref, atol=1e-5 * x.double().abs().sum(dim) + 1e-6, rtol=out_eps, what=f"sum over dim {dim}")


def test_sum_non_contiguous():
    x = torch.randn(8192, 4096, device="cuda").t()[::2]
    for dim in (None, 0, 1):
        s = tsum(x, dim)
        ref = x.double().sum() if dim is None else x.double().sum(dim)
        assert_close(s, ref, atol=1e-2, rtol=1e-4, what=f"sum over dim {dim}")


def test_bad_inputs():
    with pytest.raises(InputError, match="must not be empty"):
        tsum(torch.zeros(0, device="cuda"))
