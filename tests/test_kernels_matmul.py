"""tilewise.kernels.matmul on the CPU under the Triton interpreter (TRITON_INTERPRET=1).

The float64 product is the spec. The interpreter computes bf16 wrongly, so fp16 and fp32 run
here and bf16 runs on the GPU (tests/gpu/test_gpu_matmul.py). Configurations are pinned to
small tiles: the interpreter runs each program in numpy, and the default configurations'
128 x 256 tiles would only cost time.
"""

from __future__ import annotations

import pytest
from helpers import assert_close, kernel_device, poisoned

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from matmul_reference import matmul_reference  # noqa: E402

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels import matmul as _public_matmul  # noqa: E402
from tilewise.kernels.gemm import Config, _launch, choose_config, choose_split_k, matmul  # noqa: E402

pytestmark = pytest.mark.kernel
DEV = kernel_device()
SMALL = Config(16, 16, 16, group_m=2, split_k=1, num_warps=4, num_stages=2)


def check(c, a, b, ref):
    """|c - ref| <= u_in (|a| @ |b|) + u_out |ref| for every element: the inputs' rounding (TF32 keeps 10
    bits of an fp32 mantissa on the GPU) grows with the K-sum of |a||b|; the output's rounding with |ref|.
    An unwritten element is still NaN (the output is poisoned) and fails."""
    u_in = {torch.float32: 2.0**-10, torch.float16: 1e-6, torch.bfloat16: 1e-6}[c.dtype]
    u_out = {torch.float32: 1e-6, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}[c.dtype]
    bound = u_in * (a.double().abs() @ b.double().abs()).cpu() + 1e-6
    assert_close(c, ref, atol=bound, rtol=u_out, what="C")


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize(
    "m,n,k",
    [(1, 1, 1), (7, 13, 70), (127, 33, 129), (1000, 7, 16), (17, 1000, 23)],
)
def test_matmul_awkward_shapes(m, n, k, dtype):
    a = torch.randn(m, k, dtype=dtype, device=DEV)
    b = torch.randn(k, n, dtype=dtype, device=DEV)
    c = matmul(a, b, out=poisoned((m, n), dtype), config=SMALL)
    assert c.shape == (m, n) and c.dtype == dtype
    check(c, a, b, matmul_reference(a, b))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_matmul_non_contiguous_inputs_and_output(dtype):
    m, n, k = 37, 45, 53
    a = torch.randn(k, m, dtype=dtype, device=DEV).t()  # column-major A
    b = torch.randn(k, 2 * n, dtype=dtype, device=DEV)[:, ::2]  # every other column
    big = poisoned((m, 3 * n), dtype)
    out = big[:, ::3]  # strided output
    c = matmul(a, b, out=out, config=SMALL)
    assert c.data_ptr() == out.data_ptr()
    check(c, a, b, matmul_reference(a, b))
    assert torch.isnan(big[:, 1::3]).all(), "wrote outside the output view"


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_matmul_reads_row_padding_but_never_uses_it(dtype):
    """B is a view with 16-byte padded rows whose padding holds NaN: the kernel may load the
    padding (to keep 16-byte loads when N is not a multiple of 8) but no output may see it."""
    m, n, k = 19, 13, 37
    unit = 16 // torch.empty((), dtype=dtype).element_size()
    big = poisoned((k, -(-n // unit) * unit), dtype)
    b = big[:, :n]
    b.copy_(torch.randn(k, n, dtype=dtype, device=DEV))
    a_t = poisoned((k, -(-m // unit) * unit), dtype)  # column-major A, padded
    a = a_t[:, :m].t()
    a.copy_(torch.randn(m, k, dtype=dtype, device=DEV))
    c = matmul(a, b, out=poisoned((m, n), dtype), config=SMALL)
    check(c, a, b, matmul_reference(a, b))


@pytest.mark.parametrize("split_k", [2, 3])
def test_matmul_split_k_fixup_and_counter_reset(split_k):
    m, n, k = 33, 40, 100  # K not a multiple of split x BLOCK_K: the last split is short
    a = torch.randn(m, k, dtype=torch.float32, device=DEV)
    b = torch.randn(k, n, dtype=torch.float32, device=DEV)
    cfg = Config(16, 16, 16, group_m=2, split_k=split_k)
    c1 = matmul(a, b, out=poisoned((m, n), torch.float32), config=cfg)
    check(c1, a, b, matmul_reference(a, b))
    c2 = matmul(a, b, config=cfg)  # counters must be back at zero, and the sum order fixed
    assert torch.equal(c1, c2)


@pytest.mark.parametrize("activation", ["none", "relu", "gelu", "silu"])
def test_matmul_epilogue_bias_activation(activation):
    m, n, k = 20, 24, 40
    a = torch.randn(m, k, dtype=torch.float16, device=DEV)
    b = torch.randn(k, n, dtype=torch.float16, device=DEV)
    bias = torch.randn(n, dtype=torch.float16, device=DEV)
    c = matmul(a, b, bias=bias, activation=activation, out=poisoned((m, n), torch.float16), config=SMALL)
    check(c, a, b, matmul_reference(a, b, bias, activation))


def test_matmul_tma_persistent_kernel():
    """The persistent TMA-descriptor kernel (GPU path for 16-bit, aligned operands) in the interpreter."""
    m, n, k = 40, 48, 72
    a = torch.randn(m, k, dtype=torch.float16, device=DEV)
    b = torch.randn(k, n, dtype=torch.float16, device=DEV)
    c = poisoned((m, n), torch.float16)
    _launch(a, b, c, None, "relu", Config(32, 32, 16, group_m=2, persistent=True))
    check(c, a, b, matmul_reference(a, b, None, "relu"))


def test_matmul_default_config_small_shape():
    a = torch.randn(50, 70, dtype=torch.float32, device=DEV)
    b = torch.randn(70, 90, dtype=torch.float32, device=DEV)
    c = _public_matmul(a, b)
    check(c, a, b, matmul_reference(a, b))


# --------------------------------------------------------------------------- config choice (pure)


def test_choose_config_square_is_compute_bound_big_tiles():
    cfg = choose_config(8192, 8192, 8192, "bf16")
    assert (cfg.block_m, cfg.block_n) in ((128, 256), (256, 128), (128, 128)) and cfg.split_k == 1
    assert "tensor_core binds" in cfg.reason  # the advisor's reason names the binding term


def test_choose_config_article_skinny_shape_streams_b():
    """The decode GEMM 64 x 24576 x 8192 is memory-bound: the grid needs enough bytes in flight to
    cover HBM latency (Little's law: 4.8 TB/s x 1 us), and wide tiles so A is re-read few times."""
    from tilewise import gpus
    from tilewise.kernels.gemm import bytes_in_flight

    cfg = choose_config(64, 24576, 8192, "bf16")
    assert "hbm binds" in cfg.reason
    assert cfg.block_m <= 64 and cfg.block_n >= 128
    assert bytes_in_flight(cfg, 64, 24576, 2, 132) >= gpus.bandwidth(gpus.get("h200"), "hbm") * 1e-6


def test_choose_split_k_keeps_long_main_loops():
    assert choose_split_k(8192, 8192, 8192, 128, 256, 64, 132, 1) == 1  # 2048 tiles: no split
    s = choose_split_k(128, 128, 65536, 128, 128, 64, 132, 1)  # one tile: split K widely
    assert s >= 8 and 65536 // 64 // s >= 8


# --------------------------------------------------------------------------- bad inputs


def _t(*shape, dtype=torch.float16, device=DEV):
    return torch.randn(*shape, device=device).to(dtype)


@pytest.mark.parametrize(
    "a,b,kwargs,match",
    [
        (lambda: _t(4, 5), lambda: _t(6, 3), {}, r"inner dimensions must match.*K = 5.*K = 6"),
        (lambda: _t(4, 5), lambda: _t(5, 3, dtype=torch.float32), {}, r"same dtype"),
        (lambda: _t(2, 4, 5), lambda: _t(5, 3), {}, r"a must be 2-D, got 3-D"),
        (lambda: _t(4, 5), lambda: _t(5), {}, r"b must be 2-D, got 1-D"),
        (lambda: _t(0, 5), lambda: _t(5, 3), {}, r"a must not be empty"),
        (lambda: _t(4, 5), lambda: _t(5, 0), {}, r"b must not be empty"),
        (lambda: _t(4, 5, dtype=torch.int32), lambda: _t(5, 3, dtype=torch.int32), {}, r"bfloat16, float16 or float32"),
        (lambda: _t(4, 5), lambda: _t(5, 3, device="meta"), {}, r"same device"),
        (lambda: _t(4, 5), lambda: _t(5, 3), {"out": _t(3, 4)}, r"out must be a \[4, 3\]"),
        (lambda: _t(4, 5), lambda: _t(5, 3), {"bias": _t(4)}, r"bias must be a \[3\]"),
        (lambda: _t(4, 5), lambda: _t(5, 3), {"activation": "tanh"}, r"activation must be one of"),
        (lambda: [[1.0]], lambda: _t(1, 3), {}, r"a must be a torch.Tensor, got list"),
    ],
)
def test_matmul_bad_inputs(a, b, kwargs, match):
    with pytest.raises(InputError, match=match):
        matmul(a(), b(), **kwargs)
