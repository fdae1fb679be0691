"""tilewise.kernels.matmul on the GPU where its edge handling matters: edge masks at N, K not multiples of 16,
the persistent TMA kernel on `a @ w.T` (B described through w's own row-major descriptor) and on grids of
fewer tiles than SMs. bf16 and fp16 (the interpreter tests cannot run bf16).

The reference is the fp32 product of the same inputs (TF32 off); every element is checked. The output is
a view into a larger NaN-poisoned buffer: a mask that overshoots, or a TMA store past the view, shows as a
written pad element.
"""

from __future__ import annotations

import pytest
from helpers import assert_close, poisoned

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from tilewise.kernels.gemm import Config, matmul  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("no_tf32")]
BF, FP16 = torch.bfloat16, torch.float16
RTOL = {BF: 2.0**-7, FP16: 2.0**-10}  # 2 u of the output format


def run_case(m, n, k, dtype, cfg, nt: bool, out_view: bool = True, bias: bool = False):
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype).t() if nt else torch.randn(k, n, device="cuda", dtype=dtype)
    bb = torch.randn(n, device="cuda", dtype=dtype) if bias else None
    if out_view:  # rows padded to a 16-byte multiple (TMA-legal) plus 8 spare columns and 3 spare rows
        cols = -(-n // 8) * 8 + 8
        big = poisoned((m + 3, cols), dtype, "cuda")
        c = big[:m, :n]
    else:
        big, c = None, poisoned((m, n), dtype, "cuda")
    matmul(a, b, out=c, bias=bb, config=cfg)
    ref = a.float() @ b.float()
    if bias:
        ref = ref + bb.float()
    assert_close(c, ref, atol=16 * k * 2.0**-24 + 1e-6, rtol=RTOL[dtype], what=f"C {m}x{n}x{k} {dtype}")
    if big is not None:
        assert torch.isnan(big[m:]).all() and torch.isnan(big[:m, n:]).all(), "wrote outside the output view"


P = dict(persistent=True)
PERSISTENT = [
    Config(128, 128, 64, 8, 1, 8, 4, **P),
    Config(128, 256, 64, 8, 1, 8, 3, **P),
    Config(128, 128, 64, 8, 1, 8, 4, warp_specialize=True, **P),
    Config(128, 256, 64, 8, 1, 8, 3, warp_specialize=True, **P),
    Config(64, 128, 64, 8, 1, 4, 4, **P),
]


@pytest.mark.parametrize("cfg", PERSISTENT, ids=lambda c: c.tag())
@pytest.mark.parametrize(
    "m,n,k", [(3000, 5000, 128), (1000, 1000, 1000), (384, 6144, 4096), (4096, 4096, 4096), (520, 1000, 72)]
)
def test_persistent_tma_on_a_at_w_t(cfg, m, n, k):
    """`a @ w.T`: the kernel describes w [N, K] and multiplies by its transposed tiles."""
    run_case(m, n, k, BF, cfg, nt=True)


@pytest.mark.parametrize("cfg", PERSISTENT[:2], ids=lambda c: c.tag())
@pytest.mark.parametrize("m,n,k", [(1000, 1000, 1000), (256, 512, 2048), (8, 1000, 64)])
def test_persistent_with_fewer_tiles_than_sms(cfg, m, n, k):
    """1000^3 at 128 x 256 is 32 tiles on 132 SMs: one tile per program, the loop stride still 132."""
    run_case(m, n, k, FP16, cfg, nt=False, bias=True)


@pytest.mark.parametrize("nt", [False, True])
@pytest.mark.parametrize("dtype", [BF, FP16])
@pytest.mark.parametrize(
    "m,n,k,cfg",
    [
        (3000, 5000, 128, Config(64, 128, 64, 8, 1, 4, 3)),
        (1000, 1000, 1000, Config(64, 128, 64, 8, 1, 4, 4)),
        (100, 100, 100, Config(16, 128, 128, 8, 1, 4, 3)),
        (333, 7777, 2049, Config(128, 256, 64, 8, 1, 8, 3)),
        (64, 5000, 4096, Config(64, 64, 64, 8, 4, 4, 4)),  # split-K fix-up store at N = 5000
        (127, 1000, 7, Config(16, 64, 256, 8, 1, 4, 4)),
    ],
    ids=lambda v: v.tag() if isinstance(v, Config) else str(v),
)
def test_pointer_kernel_masks(m, n, k, cfg, dtype, nt):
    run_case(m, n, k, dtype, cfg, nt=nt)
