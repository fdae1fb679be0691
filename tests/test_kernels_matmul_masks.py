"""The pointer GEMM's edge masks at sizes that are not multiples of 16 (TRITON_INTERPRET=1 on the CPU).

`kernels.gemm._matmul_kernel` takes M, N and K as quotient x power of two so that its store mask
(`rn < N`) and its K-remainder mask stay uniform over 16-byte vectors (N = 5000 = 625 x 8: 16-byte
stores; tests/test_kernels_matmul_ptx.py checks the PTX). These tests check what that must not break:
every element of C is the float64 product, nothing past the last row or column of the output view is
written (the output sits inside a larger poisoned buffer, so a mask rounded up to the vector width
would show as non-NaN padding), and the K remainder never reads past K (A and B sit in buffers whose
padding is NaN). fp16 and fp32 only: the interpreter computes bf16 wrongly.
"""

from __future__ import annotations

import pytest
from helpers import assert_close, kernel_device, poisoned

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from tilewise.kernels.gemm import Config, matmul  # noqa: E402

pytestmark = pytest.mark.kernel
DEV = kernel_device()
# small tiles: the interpreter runs each program in numpy; 16 x 64 keeps N = 5000 at 79 column tiles
TILE = Config(16, 64, 16, group_m=2, num_warps=4, num_stages=2)


def padded_view(rows: int, cols: int, dtype, extra_rows: int = 3, extra_cols: int = 5):
    """A [rows, cols] view into a NaN-filled [rows + extra_rows, cols + extra_cols] buffer, and the buffer."""
    big = poisoned((rows + extra_rows, cols + extra_cols), dtype)
    return big[:rows, :cols], big


def operands(m: int, n: int, k: int, dtype, layout: str):
    """A [m, k] and B [k, n] (layout "nt": B = w.T for a row-major w [n, k]), each a view into a NaN
    padded buffer: a load past K, M or N that reaches an output turns it into NaN."""
    a, _ = padded_view(m, k, dtype)
    a.copy_(torch.randn(m, k, dtype=dtype, device=DEV))
    if layout == "nt":
        w, _ = padded_view(n, k, dtype)
        w.copy_(torch.randn(n, k, dtype=dtype, device=DEV))
        b = w.t()
    else:
        b, _ = padded_view(k, n, dtype)
        b.copy_(torch.randn(k, n, dtype=dtype, device=DEV))
    return a, b


def check(c, a, b, bias=None):
    """Every element within the inputs' rounding (grows with the K-sum of |a||b|) and the output's."""
    ref = a.double() @ b.double()
    if bias is not None:
        ref = ref + bias.double()
    u_in = {torch.float32: 2.0**-10, torch.float16: 1e-6}[c.dtype]
    u_out = {torch.float32: 1e-6, torch.float16: 2.0**-10}[c.dtype]
    bound = u_in * (a.double().abs() @ b.double().abs()) + 1e-6
    assert_close(c, ref, atol=bound, rtol=u_out, what="C")


def assert_untouched(big, rows: int, cols: int):
    assert torch.isnan(big[rows:]).all(), "wrote past the last row of the output"
    assert torch.isnan(big[:rows, cols:]).all(), "wrote past the last column of the output"


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize(
    "m,n,k,layout",
    [
        (1, 5000, 24, "nn"),  # N = 8 x 625: the mask's quotient is odd
        (3, 5000, 40, "nt"),
        (7, 1000, 24, "nn"),  # 8 x 125
        (100, 100, 100, "nn"),  # 4 x 25: 8-byte vectors at fp16
        (127, 127, 33, "nt"),  # odd everywhere: scalar masks
        (1000, 7, 16, "nn"),
        (5003, 9, 17, "nt"),
        (33, 8, 7, "nn"),  # N = 8 x 1 (a quotient of 1 is specialized as a constant)
    ],
)
def test_masks_at_awkward_sizes(m, n, k, layout, dtype):
    a, b = operands(m, n, k, dtype, layout)
    c, big = padded_view(m, n, dtype)
    out = matmul(a, b, out=c, config=TILE)
    assert out.data_ptr() == c.data_ptr()
    check(c, a, b)
    assert_untouched(big, m, n)


@pytest.mark.parametrize("k", [7, 100, 1000])
def test_k_remainder_step_never_reads_past_k(k):
    """K = 7, 100, 1000 with BLOCK_K = 32: the remainder step's mask (K passed as quotient x power of
    two) must stop at K exactly; A's and B's padding past K is NaN."""
    m, n = 24, 40
    a, b = operands(m, n, k, torch.float16, "nn")
    c, big = padded_view(m, n, torch.float16)
    matmul(a, b, out=c, config=Config(16, 32, 32, group_m=2, num_stages=2))
    check(c, a, b)
    assert_untouched(big, m, n)


@pytest.mark.parametrize("n", [100, 1000, 5000])
@pytest.mark.parametrize("split_k", [2, 3])
def test_split_k_store_and_bias_at_awkward_n(n, split_k):
    """The split-K fix-up writes C through the same mask; the bias load is masked by N too."""
    m, k = 5, 200
    a, b = operands(m, n, k, torch.float32, "nt")
    bias = torch.randn(n, dtype=torch.float32, device=DEV)
    c, big = padded_view(m, n, torch.float32)
    matmul(a, b, out=c, bias=bias, config=Config(16, 64, 16, group_m=2, split_k=split_k, num_stages=2))
    check(c, a, b, bias)
    assert_untouched(big, m, n)


def test_column_major_output_at_awkward_m():
    """C column-major (M is its unit-stride dimension): the row mask is the one along the vectors."""
    m, n, k = 1000, 7, 24
    a, b = operands(m, n, k, torch.float16, "nn")
    ct, big = padded_view(n, m, torch.float16)  # C^T [n, m] row-major: C = ct.t() has strides (1, m + 5)
    c = ct.t()
    matmul(a, b, out=c, config=Config(64, 16, 16, group_m=2, num_stages=2))
    check(c, a, b)
    assert_untouched(big, n, m)


@pytest.mark.parametrize("layout", ["nn", "nt"])
def test_persistent_tma_kernel_both_layouts_fewer_tiles_than_sms(layout):
    """The TMA kernel (called directly: the launcher takes it on a GPU only) on `a @ w.T` (it describes w
    [N, K] and multiplies by its transposed tiles) and on 12 tiles: the grid is 12 programs while the
    loop's stride stays the SM count, so each program takes one tile. Edges at M = 70, N = 88, K = 40."""
    from tilewise.kernels.gemm import _launch

    m, n, k = 70, 88, 40
    a = torch.randn(m, k, dtype=torch.float16, device=DEV)
    b = (
        torch.randn(n, k, dtype=torch.float16, device=DEV).t()
        if layout == "nt"
        else torch.randn(k, n, dtype=torch.float16, device=DEV)
    )
    c = poisoned((m, n), torch.float16)
    _launch(a, b, c, None, "none", Config(32, 32, 16, group_m=2, persistent=True))
    check(c, a, b)
