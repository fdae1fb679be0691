"""tilewise.kernels.decode_attention under the Triton interpreter, against a float64 reference.

Run: TRITON_INTERPRET=1 pytest tests/test_kernels_decode.py
"""

from __future__ import annotations

import pytest
from helpers import assert_close, kernel_device

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from decode_reference import decode_reference  # noqa: E402

import tilewise.kernels.decode as dec_mod  # noqa: E402
from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels.decode import choose_splits, decode_attention  # noqa: E402

pytestmark = pytest.mark.kernel
DEV = kernel_device()
TOL = {torch.float16: 4e-3, torch.float32: 4e-5, torch.bfloat16: 3e-2}


def rand(*shape, dtype):
    return torch.randn(*shape, dtype=dtype, device=DEV)


def check(q, k, v, lens, **kw):
    out, lse = decode_attention(q, k, v, lens, **kw)
    ro, rl = decode_reference(q.cpu(), k.cpu(), v.cpu(), [int(x) for x in lens], kw.get("scale"))
    assert out.shape == q.shape and out.dtype == q.dtype
    assert lse.shape == (q.shape[0], q.shape[1]) and lse.dtype == torch.float32
    # every element, NaN poison included; lse is -inf exactly on empty sequences
    assert_close(out.reshape(ro.shape), ro, atol=TOL[q.dtype], what="out")
    assert_close(lse, rl, atol=1e-4, what="lse")
    return out, lse


@pytest.fixture(autouse=True)
def _poison_allocations(poison):
    """Every tensor the op allocates starts poisoned (NaN), so an element it never writes fails the test."""
    poison(dec_mod.torch, "empty", "empty_strided")


@pytest.mark.parametrize("hq,hk", [(4, 4), (8, 2), (8, 1)])  # GQA ratios 1, 4, 8
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_gqa_ratios_with_empty_and_single_key(hq, hk, dtype):
    lens = [0, 1, 150, 64]
    q, k, v = rand(4, hq, 32, dtype=dtype), rand(4, hk, 160, 32, dtype=dtype), rand(4, hk, 160, 32, dtype=dtype)
    out, lse = check(q, k, v, torch.tensor(lens))
    assert (out[0] == 0).all() and (lse[0] == float("-inf")).all()


@pytest.mark.parametrize("splits", range(1, 8))
def test_every_split_count(splits):
    """Lengths 0, 1, 130 and 200 with 64-key tiles: chunks past the end, chunks of one key, empty splits."""
    lens = [130, 0, 200, 1]
    q, k, v = rand(4, 8, 16, dtype=torch.float32), rand(4, 2, 200, 16, dtype=torch.float32), None
    v = rand(4, 2, 200, 16, dtype=torch.float32)
    check(q, k, v, torch.tensor(lens), num_splits=splits)


def test_four_dim_query_list_lengths_and_scale():
    q = rand(2, 4, 1, 32, dtype=torch.float16)
    k, v = rand(2, 1, 100, 32, dtype=torch.float16), rand(2, 1, 100, 32, dtype=torch.float16)
    out, _ = check(q, k, v, [100, 37], scale=0.2)
    assert out.shape == (2, 4, 1, 32)


def test_tma_and_plain_loads_agree():
    """Key tiles through TMA descriptors (contiguous cache) and through plain loads give the same answer."""
    q, k, v = rand(2, 8, 32, dtype=torch.float32), rand(2, 2, 200, 32, dtype=torch.float32), None
    v = rand(2, 2, 200, 32, dtype=torch.float32)
    a, la = decode_attention(q, k, v, [200, 130], num_splits=2, use_desc=True)
    b, lb = decode_attention(q, k, v, [200, 130], num_splits=2, use_desc=False)
    assert_close(a, b, atol=1e-6, what="out")
    assert_close(la, lb, atol=1e-6, what="lse")
    # a strided cache (a [B, L, H, D] buffer seen as [B, H, L, D]) takes the plain path
    ks = rand(2, 200, 2, 32, dtype=torch.float32).transpose(1, 2)
    vs = rand(2, 200, 2, 32, dtype=torch.float32).transpose(1, 2)
    check(q, ks, vs, [200, 3], num_splits=3)


def test_device_lengths_plan_from_cache_capacity():
    """seq_lens on the cache's device: no host read; the plan assumes the cache capacity."""
    q, k, v = rand(3, 8, 32, dtype=torch.float16), rand(3, 2, 300, 32, dtype=torch.float16), None
    v = rand(3, 2, 300, 32, dtype=torch.float16)
    check(q, k, v, torch.tensor([300, 5, 129], device=DEV, dtype=torch.int32), max_chunk=64)


@pytest.mark.parametrize("page,pages", [(64, 4), (16, 16)])
def test_paged_cache(page, pages):
    """block_table: pages scattered in a pool, the same answer as the contiguous cache; a page smaller than
    the default key tile (16 keys, vLLM's page) narrows the tile."""
    b, hk, d = 3, 2, 32
    k, v = rand(b, hk, page * pages, d, dtype=torch.float32), rand(b, hk, page * pages, d, dtype=torch.float32)
    q = rand(b, 8, d, dtype=torch.float32)
    perm = torch.randperm(b * pages)
    kp = torch.empty(b * pages, hk, page, d, dtype=torch.float32)
    vp = torch.empty_like(kp)
    kp[perm] = k.reshape(b, hk, pages, page, d).permute(0, 2, 1, 3, 4).reshape(b * pages, hk, page, d)
    vp[perm] = v.reshape(b, hk, pages, page, d).permute(0, 2, 1, 3, 4).reshape(b * pages, hk, page, d)
    table = perm.view(b, pages).to(torch.int32)
    lens = [256, 65, 0]
    for splits in (None, 1, 3):
        out, _ = decode_attention(q, kp, vp, torch.tensor(lens), block_table=table, num_splits=splits)
        ro, _ = decode_reference(q, k, v, lens)
        assert_close(out, ro, atol=4e-5, what=f"out, {splits} splits")


def test_split_plan_follows_the_model_and_caps_chunks():
    from tilewise.model.decode import choose_num_splits

    # B1 Hkv8 128k: the model's wave rule gives 16 splits of 8192 keys (what the kernel uses by default)
    model = choose_num_splits(1, 8, 131072, 132, block_n=64)
    assert choose_splits(1, 8, 131072, 132, 64) == (model, 131072 // model)
    # a cap on the keys per program raises the split count: 4096 keys -> 32 splits
    splits, chunk = choose_splits(1, 8, 131072, 132, 64, max_chunk=4096)
    assert (splits, chunk) == (32, 4096)
    # B64 Hkv8 4k: 512 programs already fill 132 SMs: no split
    assert choose_splits(64, 8, 4096, 132, 64) == (1, 4096)
    # chunks are whole key tiles and cover the sequence
    for b, hk, n in [(1, 8, 1000), (3, 2, 77777), (32, 8, 65536)]:
        s_, c_ = choose_splits(b, hk, n, 132, 64)
        assert c_ % 64 == 0 and s_ * c_ >= n > (s_ - 1) * c_


# --------------------------------------------------------------------------- bad inputs


def _args(b=2, hq=8, hk=2, n=64, d=32, dtype=torch.float16):
    return rand(b, hq, d, dtype=dtype), rand(b, hk, n, d, dtype=dtype), rand(b, hk, n, d, dtype=dtype)


@pytest.mark.parametrize(
    "make,match",
    [
        (lambda: (*_args()[:1], *_args(hk=3)[1:], [1, 1]), "multiple of the cache's kv heads"),
        (lambda: (_args(d=64)[0], *_args()[1:], [1, 1]), "head_dim 64"),
        (lambda: (_args()[0], *_args(dtype=torch.float32)[1:], [1, 1]), "share one dtype"),
        (lambda: (_args()[0].to("meta"), *_args()[1:], [1, 1]), "one device"),
        (lambda: (*_args(), [65, 1]), "lie in \\[0, 64\\]"),
        (lambda: (*_args(), torch.tensor([-1, 3])), "lie in \\[0, 64\\]"),
        (lambda: (*_args(), [1, 2, 3]), "2 entries"),
        (lambda: (*_args(), torch.tensor([1.0, 2.0])), "integers"),
        (lambda: (*_args(), torch.tensor([[1, 2]])), "shape \\[2\\]"),
        (lambda: (_args(b=3)[0], *_args()[1:], [1, 1, 1]), "batch 3"),
        (lambda: (rand(2, 8, 2, 32, dtype=torch.float16), *_args()[1:], [1, 1]), "one new token"),
    ],
)
def test_bad_inputs(make, match):
    q, k, v, lens = make()
    with pytest.raises(InputError, match=match):
        decode_attention(q, k, v, lens)


def test_bad_block_table():
    q, k, v = _args()
    with pytest.raises(InputError, match="block_table must have shape"):
        decode_attention(q, k, v, [1, 1], block_table=torch.zeros(3, 2, dtype=torch.int32))
    with pytest.raises(InputError, match="page_size must be a multiple of 16"):
        decode_attention(q, k[:, :, :40], v[:, :, :40], [1, 1], block_table=torch.zeros(2, 2, dtype=torch.int32))
    with pytest.raises(InputError, match="multiple of the key tile 64"):
        decode_attention(
            q, k[:, :, :48], v[:, :, :48], [1, 1], block_table=torch.zeros(2, 2, dtype=torch.int32), tile=(64, 4, 1)
        )


def test_default_tile_keeps_the_measured_shared_memory_footprint():
    """128 keys at D 128 in 16-bit (the measured tile: 192 KiB of K/V stages); wider rows take fewer keys,
    so D 256 or fp32 never asks for more shared memory than that (an H200 block may have 227 KiB)."""
    from tilewise.kernels.decode import DECODE_SMEM, default_tile

    assert default_tile(128, 2) == (128, 4, 3)
    assert default_tile(64, 2)[0] == 128 and default_tile(32, 2)[0] == 128
    assert default_tile(256, 2)[0] == 64 and default_tile(128, 4)[0] == 64 and default_tile(256, 4)[0] == 32
    for d in (16, 32, 64, 128, 256):
        for e in (2, 4):
            bn, _, st = default_tile(d, e)
            assert 2 * bn * d * e * st <= DECODE_SMEM and bn >= 16


@pytest.mark.parametrize("d,dtype", [(256, torch.float16), (128, torch.float32)])
def test_wide_rows_take_the_narrowed_tile(d, dtype):
    """D 256 in fp16 (64-key tiles) and D 128 in fp32 (64-key tiles), ragged lengths, split and not."""
    q, k, v = rand(2, 4, d, dtype=dtype), rand(2, 2, 200, d, dtype=dtype), rand(2, 2, 200, d, dtype=dtype)
    check(q, k, v, [200, 77])
    check(q, k, v, [129, 200], num_splits=3)


@pytest.mark.parametrize("merge", ["inline", "launch"])
@pytest.mark.parametrize("splits", [2, 3, 7])
def test_merge_placements_agree_with_float64(merge, splits):
    """Both merge placements (last split in the launch; a second kernel) on ragged lengths, GQA 4, empty
    splits and an empty sequence; the second call reuses the plan (and, inline, the counters it reset)."""
    lens = [130, 0, 200, 1, 57]
    q = rand(5, 8, 32, dtype=torch.float16)
    k, v = rand(5, 2, 200, 32, dtype=torch.float16), rand(5, 2, 200, 32, dtype=torch.float16)
    for _ in range(2):
        out, lse = check(q, k, v, torch.tensor(lens), num_splits=splits, merge=merge, tile=(16, 4, 1))
    assert (lse[1] == float("-inf")).all()


def test_merge_placement_is_the_models_and_checked():
    from tilewise.model.predict import decode_merge

    p = {"batch": 1, "heads": 32, "kv_heads": 8, "seq_len": 1024, "head_dim": 128, "dtype": "bf16"}
    c = {"block_n": 64, "num_warps": 4, "num_stages": 3, "num_splits": 16}
    got = dec_mod.merge_placement(1, 32, 8, 1024, 128, torch.bfloat16, "h200", 64, 4, 3, 16)
    assert got == (decode_merge(p, c, "h200", graph=True), decode_merge(p, c, "h200", graph=False))
    assert dec_mod.merge_placement(1, 32, 8, 1024, 128, torch.bfloat16, "h200", 64, 4, 3, 1) == ("inline", "inline")
    q, k = rand(1, 4, 16, dtype=torch.float32), rand(1, 4, 64, 16, dtype=torch.float32)
    with pytest.raises(InputError, match="merge must be one of inline, launch"):
        decode_attention(q, k, k, [64], num_splits=2, merge="later")


@pytest.mark.parametrize("merge", ["inline", "launch"])
def test_merge_over_several_chunks_of_splits(merge):
    """The merge reads the partials in chunks of 4096 / (group x D) splits (4 at GQA 8, D 128) and rescales its
    running sums when a later chunk raises the maximum: 13 splits of 16 keys over 4 chunks, the largest scores
    in the last splits (keys scaled up at the end), ragged lengths whose last chunks are empty, one empty
    sequence; against float64."""
    lens = [200, 37, 0, 129]
    q = rand(4, 8, 128, dtype=torch.float32)
    k = rand(4, 1, 200, 128, dtype=torch.float32)
    k[:, :, 150:] *= 4.0  # the maximum arrives in the fourth chunk of splits
    v = rand(4, 1, 200, 128, dtype=torch.float32)
    out, lse = check(q, k, v, torch.tensor(lens), num_splits=13, merge=merge, tile=(16, 4, 1))
    assert (lse[2] == float("-inf")).all() and (out[2] == 0).all()
