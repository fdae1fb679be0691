"""Grouped GEMM and MoE layer at full size on the GPU (bf16 included), against fp32 references.

Run on the device: PYTHONPATH=src pytest -m gpu tests/gpu/test_gpu_moe.py
"""

from __future__ import annotations

import pytest
from helpers import assert_close, poisoned

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

pytestmark = pytest.mark.gpu

from tilewise.kernels.grouped_gemm import GroupedConfig as C  # noqa: E402
from tilewise.kernels.grouped_gemm import grouped_matmul  # noqa: E402
from tilewise.kernels.moe_layer import moe, moe_reference  # noqa: E402
from tilewise.model import waves  # noqa: E402

TOL = {torch.bfloat16: 2e-2, torch.float16: 4e-3}  # relative to max |y|
F = dict(tma=True, flatten=True)


@pytest.fixture(autouse=True)
def _poison_allocations(poison):
    """Every buffer the ops allocate uninitialised starts poisoned (NaN): an unwritten element fails."""
    poison(torch, "empty")


def close(a, ref, tol, what):
    """Every element within tol x the reference's largest magnitude (NaN poison left fails)."""
    assert_close(a, ref, atol=tol * ref.abs().max().item(), what=what)


def _counts(E, rmax, seed=0):
    g = torch.Generator().manual_seed(seed)
    counts = torch.randint(0, rmax, (E,), generator=g).tolist()
    for z in (3, 17, 64, 100):
        counts[z % E] = 0
    counts[5 % E] = 3 * rmax + 7
    return counts


def _inputs(counts, K, N, dtype):
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(sum(counts), K, device="cuda", dtype=dtype, generator=g)
    w = torch.randn(len(counts), K, N, device="cuda", dtype=dtype, generator=g) / K**0.5
    off = torch.tensor(counts, device="cuda").cumsum(0).to(torch.int32)
    return x, w, off


def _ref(x, w, counts):
    y = torch.empty(x.shape[0], w.shape[2], device="cuda", dtype=torch.float32)
    s = 0
    for e, c in enumerate(counts):
        y[s : s + c] = x[s : s + c].float() @ w[e].float()
        s += c
    return y


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize(
    "cfg",
    [
        None,
        C(16, 128, 128, 4, 4, **F),
        C(16, 128, 128, 4, 4, schedule="search", **F),
        C(16, 128, 128, 4, 4, swap_ab=True, **F),
        C(64, 128, 64, 4, 4, **F),
        C(128, 128, 64, 8, 4, tma=True),
        C(128, 256, 64, 8, 3, **F),
        C(32, 128, 128, 4, 4),
    ],
    ids=lambda c: c.key() if c else "default",
)
@pytest.mark.parametrize("rmax", [16, 200])
def test_grouped_full_size(cfg, dtype, rmax):
    counts = _counts(128, rmax)
    x, w, off = _inputs(counts, 2048, 1536, dtype)
    y = poisoned((x.shape[0], 1536), dtype, "cuda")
    grouped_matmul(x, w, off, out=y, config=cfg)
    ref = _ref(x, w, counts)
    close(y, ref, TOL[dtype], "y")


def test_grouped_matches_torch_grouped_mm_odd_shape():
    counts = _counts(37, 40, seed=2)
    x, w, off = _inputs(counts, 1000, 776, torch.bfloat16)  # K not a multiple of BLOCK_K
    y = grouped_matmul(x, w, off)
    ref = _ref(x, w, counts)
    close(y, ref, TOL[torch.bfloat16], "y")


def test_trace_at_full_size():
    counts = _counts(128, 40)
    x, w, off = _inputs(counts, 256, 1536, torch.bfloat16)
    cfg = C(16, 128, 128, 4, 4, **F)
    _, tr = grouped_matmul(x, w, off, config=cfg, trace=True)
    sch = waves.grouped_schedule(counts, 16, 1536, 128)
    P = torch.cuda.get_device_properties(0).multi_processor_count
    tr = tr[: sch.total_tiles].cpu().tolist()
    for t in range(sch.total_tiles):
        e, local = waves.tile_owner(sch.prefix, t)
        assert tr[t] == [t % P, e, *waves.local_tile_coords(sch, e, local)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize(
    "T, d, f, E, k, gate",
    [(512, 2048, 768, 128, 8, "softmax"), (96, 7168, 2048, 256, 8, "sigmoid"), (333, 1024, 512, 16, 1, "softmax")],
    ids=["qwen3", "dsv3", "top1"],
)
def test_moe_full_width(T, d, f, E, k, gate, dtype):
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(T, d, device="cuda", dtype=dtype, generator=g)
    lg = torch.randn(T, E, device="cuda", generator=g)
    wgu = torch.randn(E, d, 2 * f, device="cuda", dtype=dtype, generator=g) / d**0.5
    wd = torch.randn(E, f, d, device="cuda", dtype=dtype, generator=g) / f**0.5
    out = moe(x, lg, wgu, wd, k, gate=gate)
    ref = moe_reference(x, lg, wgu, wd, k, gate=gate, dtype=torch.float32)
    close(out, ref, 1.5 * TOL[dtype], "out")
