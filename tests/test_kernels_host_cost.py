"""Host cost of the public ops: a repeated call finds its launch plan by signature (a dict lookup), runs no
input check again, asks the device nothing and copies nothing between host and device; a new signature
gets a new plan (and its checks); the results stay right. Runs under the Triton interpreter."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from helpers import assert_close  # noqa: E402

from tilewise.errors import InputError  # noqa: E402
from tilewise.kernels import decode as dec  # noqa: E402
from tilewise.kernels import (  # noqa: E402
    ffn,  # noqa: E402
    gemm,
    grouped_gemm,
    moe_layer,
    reduce,
)
from tilewise.kernels import flash_attention as fa  # noqa: E402

pytestmark = pytest.mark.kernel


def _forbid_host_sync_and_device_queries(monkeypatch):
    """Make every device query, host<->device copy and scalar read raise."""

    def boom(name):
        def f(*a, **k):
            raise AssertionError(f"{name} on the hot path")

        return f

    for name in ("get_device_properties", "get_device_capability", "get_device_name", "synchronize"):
        monkeypatch.setattr(torch.cuda, name, boom(f"torch.cuda.{name}"))
    for name in ("item", "tolist", "cpu", "numpy"):
        monkeypatch.setattr(torch.Tensor, name, boom(f"Tensor.{name}"))


def _forbid_checks(monkeypatch, module, *names):
    for name in names:
        monkeypatch.setattr(module, name, lambda *a, **k: (_ for _ in ()).throw(AssertionError(f"{name} re-run")))


def _second_call_is_a_plan_hit(monkeypatch, module, checks, call, cache="_PLANS"):
    plans = getattr(module, cache)
    first = call()
    misses = plans.misses
    with monkeypatch.context() as m:
        _forbid_host_sync_and_device_queries(m)
        _forbid_checks(m, module, *checks)
        second = call()
    assert plans.misses == misses, "the second call made a new plan"
    return first, second


def _rand(*shape, dtype=torch.float16):
    return torch.randn(*shape, dtype=dtype)


def test_matmul_plan_hit(monkeypatch):
    a, b = _rand(33, 40), _rand(40, 24)
    c1, c2 = _second_call_is_a_plan_hit(monkeypatch, gemm, ["_check", "choose_config"], lambda: gemm.matmul(a, b))
    ref = a.double() @ b.double()
    assert_close(c2, ref, atol=1e-2, rtol=1e-2, what="C")
    assert torch.equal(c1, c2)


def test_matmul_with_padded_operands_is_a_plan_hit(monkeypatch):
    """Operands whose rows are not 16-byte aligned are copied to padded rows (here forced for small ones), and N
    is odd, so the loads' extent along N depends on the storage's size: the key holds that extent and the plan
    is cached like any other (it was rebuilt on every call: 1023 x 1025 x 1027 bf16 ran 128.5 us eager against
    22.3 in a CUDA graph)."""
    from tilewise.model import predict

    monkeypatch.setattr(predict, "PAD_MIN_BYTES", 0)
    monkeypatch.setattr(predict, "PAD_MIN_FLOPS_PER_BYTE", 0)
    a, b = _rand(7, 13), _rand(13, 9)  # 26- and 18-byte rows, N = 9: both copied, C's rows odd
    c1, c2 = _second_call_is_a_plan_hit(monkeypatch, gemm, ["_check", "choose_config"], lambda: gemm.matmul(a, b))
    plan = gemm._PLANS.get(gemm._plan_key(a, b, None, None, "none", None))
    assert plan is not None and plan.pad_a and plan.pad_b
    assert_close(c2, a.double() @ b.double(), atol=1e-2, rtol=1e-2, what="C")
    assert torch.equal(c1, c2)


def test_matmul_odd_n_is_a_plan_hit_and_the_storage_size_is_in_the_key(monkeypatch):
    """N = 100 at 16 bits (not a multiple of 8): loads may read up to the 16-byte padding of each row when the
    storage holds it, which shapes and strides do not say. The same layout in a larger storage is a new plan;
    each repeats as a hit, every result right (100^3 bf16 ran 58.7 us eager against 4.4 in a graph before)."""
    a = _rand(20, 36)
    b = _rand(36, 100)
    c1, c2 = _second_call_is_a_plan_hit(monkeypatch, gemm, ["_check", "choose_config"], lambda: gemm.matmul(a, b))
    assert_close(c2, a.double() @ b.double(), atol=1e-2, rtol=1e-2, what="C")
    # the same shape and strides (rows 104 apart) in two storages: one holds the last row's padding, one ends
    # at its 100th column, so the loads may read 104 columns of the first and 100 of the second
    roomy = torch.zeros(36 * 104, dtype=torch.float16).as_strided((36, 100), (104, 1))
    tight = torch.zeros(35 * 104 + 100, dtype=torch.float16).as_strided((36, 100), (104, 1))
    roomy.copy_(b)
    tight.copy_(b)
    assert gemm._load_extents(a, roomy) != gemm._load_extents(a, tight)
    misses = gemm._PLANS.misses
    c3, c4 = gemm.matmul(a, roomy), gemm.matmul(a, tight)
    assert gemm._PLANS.misses == misses + 2
    assert torch.equal(c3, c1) and torch.equal(c4, c1)
    _second_call_is_a_plan_hit(monkeypatch, gemm, ["_check", "choose_config"], lambda: gemm.matmul(a, tight))


def test_matmul_new_signature_new_plan():
    a, b = _rand(33, 40), _rand(40, 24)
    gemm.matmul(a, b)
    misses = gemm._PLANS.misses
    bt = _rand(24, 40).t()  # same shape, other strides
    c = gemm.matmul(a, bt)
    assert gemm._PLANS.misses == misses + 1
    assert_close(c, a.double() @ bt.double(), atol=1e-2, rtol=1e-2, what="C")
    odd = _rand(33 * 40 + 1)[1:].view(33, 40)  # 2-byte offset: not 16-byte aligned, a new plan
    c = gemm.matmul(odd, b)
    assert gemm._PLANS.misses == misses + 2
    assert_close(c, odd.double() @ b.double(), atol=1e-2, rtol=1e-2, what="C")


def test_cached_signature_still_refuses_bad_input():
    a, b = _rand(16, 16), _rand(16, 16)
    gemm.matmul(a, b)
    with pytest.raises(InputError, match="inner dimensions"):
        gemm.matmul(a, _rand(17, 16))
    with pytest.raises(InputError, match="activation"):
        gemm.matmul(a, b, activation=["relu"])  # unhashable: no plan lookup, the check refuses it
    with pytest.raises(InputError, match="torch.Tensor"):
        gemm.matmul(a.numpy(), b)
    x = _rand(100)
    reduce.sum(x, 0)
    with pytest.raises(InputError, match="dim must be an int"):
        reduce.sum(x, True)  # True == 0 and hashes alike: the key keeps the type apart


def test_sum_plan_hits(monkeypatch):
    x = _rand(5000)
    _, s = _second_call_is_a_plan_hit(monkeypatch, reduce, ["_check", "choose_config"], lambda: reduce.sum(x))
    assert_close(s, x.double().sum(), atol=1e-2, rtol=1e-3, what="sum")
    y = _rand(7, 300, 5)
    _, s = _second_call_is_a_plan_hit(monkeypatch, reduce, ["_check"], lambda: reduce.sum(y, 1, keepdim=True))
    assert s.shape == (7, 1, 5)
    assert_close(s, y.double().sum(1, keepdim=True), atol=1e-2, rtol=1e-3, what="sum")


def test_attention_plan_hit(monkeypatch):
    q, k, v = _rand(1, 2, 40, 32), _rand(1, 1, 50, 32), _rand(1, 1, 50, 32)
    _, (o, lse) = _second_call_is_a_plan_hit(
        monkeypatch, fa, ["_check", "forward_config"], lambda: fa.attention(q, k, v, causal=True)
    )
    kk, vv = k.double().repeat(1, 2, 1, 1), v.double().repeat(1, 2, 1, 1)
    mask = torch.ones(40, 50, dtype=torch.bool).tril(10)
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), kk, vv, attn_mask=mask)
    assert_close(o, ref, atol=2e-3, rtol=2e-3, what="out")


def test_decode_host_lengths_plan_hit(monkeypatch):
    q, kc, vc = _rand(2, 4, 32), _rand(2, 2, 96, 32), _rand(2, 2, 96, 32)
    call = lambda: dec.decode_attention(q, kc, vc, [90, 17])  # noqa: E731
    call()
    misses = dec._PLANS.misses
    with monkeypatch.context() as m:
        _forbid_checks(m, dec, "_check", "_make_plan", "choose_splits")
        out, _ = call()
    assert dec._PLANS.misses == misses
    # lengths still checked every call on the host
    with pytest.raises(InputError, match="seq_lens must lie in"):
        dec.decode_attention(q, kc, vc, [97, 17])
    s = (q.double().view(2, 2, 2, 32) @ kc.double().transpose(-1, -2)) / 32**0.5  # [B, Hkv, group, L]
    for b, n in enumerate((90, 17)):
        p = torch.softmax(s[b, :, :, :n], -1)
        ref = (p @ vc.double()[b, :, :n]).reshape(4, 32)
        assert_close(out[b], ref, atol=2e-3, rtol=2e-3, what=f"out[{b}]")


def test_grouped_and_moe_plan_hits(monkeypatch):
    x, w = _rand(40, 32), _rand(3, 32, 48)
    off = torch.tensor([10, 10, 40], dtype=torch.int32)
    _, y = _second_call_is_a_plan_hit(
        monkeypatch,
        grouped_gemm,
        ["_check_inputs", "_choose_checked", "choose_config"],
        lambda: grouped_gemm.grouped_matmul(x, w, off, check_offsets=False),
        cache="_CALLS",
    )
    ref = torch.cat([x[:10].double() @ w[0].double(), x[10:].double() @ w[2].double()])
    assert_close(y, ref, atol=1e-2, rtol=1e-2, what="y")
    mx, ml = _rand(12, 32), torch.randn(12, 4)
    mgu, mdn = _rand(4, 32, 64) / 6, _rand(4, 32, 32) / 6
    _, out = _second_call_is_a_plan_hit(
        monkeypatch,
        moe_layer,
        ["_check_moe", "moe_configs"],
        lambda: moe_layer.moe(mx, ml, mgu, mdn, 2),
    )
    ref = moe_layer.moe_reference(mx, ml, mgu, mdn, 2)
    assert_close(out, ref, atol=1e-2, rtol=1e-2, what="moe")


def test_flash_ffn_forward_plan_hit(monkeypatch):
    z, wg, wu, wd = _rand(20, 2, 64), _rand(2, 64, 40) / 8, _rand(2, 64, 40) / 8, _rand(2, 40, 64) / 6
    _, y = _second_call_is_a_plan_hit(
        monkeypatch, ffn, ["_check"], lambda: ffn.flash_ffn(z, wg, wu, wd), cache="_FWD_PLANS"
    )
    assert_close(y, ffn.mhffn_unfused(z.double(), wg.double(), wu.double(), wd.double()), atol=1e-2, rtol=1e-2)


def test_fp32_attention_tiles_fit_shared_memory(monkeypatch):
    """fp32 at D 128 once asked Triton for 393,216 B (3 stages of 128-key K/V tiles at 4 bytes) against
    232,448. The plan budgets fp32 at 4 bytes: every head dim and dtype gets tiles whose K/V stages fit."""
    monkeypatch.setattr(fa, "interpreting", lambda: False)
    for d in (16, 32, 64, 128, 256):
        for dtype, e in ((torch.float32, 4), (torch.float16, 2), (torch.bfloat16, 2)):
            cfg = fa.forward_config(d, False, dtype, 4096)
            kv = cfg.num_stages * 2 * cfg.block_n * d * e  # what Triton was once asked for
            assert kv + cfg.block_m * d * e <= 232_448, (d, dtype, cfg)
    fp32 = fa.forward_config(128, True, torch.float32, 4096)
    assert (fp32.block_m, fp32.block_n, fp32.num_stages) != (128, 128, 3)
    # the 16-bit choices are the measured candidates, unchanged
    assert fa.forward_config(128, True, torch.bfloat16, 4096).block_n == 128
