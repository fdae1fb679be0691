"""The kernels take their defaults from the advisor, and every config it proposes runs in the interpreter.

Run: TRITON_INTERPRET=1 pytest tests/test_advise_defaults.py (fp16: the interpreter computes bf16 wrongly).
"""

from __future__ import annotations

import math

import pytest
from helpers import interpreting

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

if not interpreting():
    pytest.skip("needs TRITON_INTERPRET=1", allow_module_level=True)

from tilewise.advise import advise, default_config  # noqa: E402
from tilewise.kernels import decode as dec  # noqa: E402
from tilewise.kernels.decode import decode_attention  # noqa: E402
from tilewise.kernels.flash_attention import ForwardConfig, attention  # noqa: E402
from tilewise.kernels.gemm import Config, choose_config, matmul  # noqa: E402
from tilewise.kernels.grouped_gemm import GroupedConfig, grouped_matmul  # noqa: E402
from tilewise.kernels.grouped_gemm import choose_config as grouped_choose  # noqa: E402

SHAPES = [(1, 24576, 8192, "nn"), (64, 24576, 8192, "nn"), (1000, 1000, 1000, "nn"), (1024, 4096, 4096, "nt"),
          (8192, 8192, 8192, "nn"), (333, 7777, 2049, "nn"), (16, 4096, 14336, "nt")]  # fmt: skip


@pytest.mark.parametrize("m, n, k, layout", SHAPES)
def test_matmul_default_is_the_advisors_top1(m, n, k, layout):
    cfg = choose_config(m, n, k, "bf16", None, layout)
    top = default_config("gemm", {"m": m, "n": n, "k": k, "dtype": "bf16", "layout": layout}, "h200")
    assert cfg == Config(**top, reason=cfg.reason)
    assert cfg.reason == advise("gemm", {"m": m, "n": n, "k": k, "layout": layout}, top_k=1)[0].reason


def test_decode_and_grouped_defaults_are_the_advisors_top1():
    p = {"batch": 4, "heads": 32, "kv_heads": 8, "seq_len": 8192, "head_dim": 128, "dtype": "bf16"}
    c = default_config("decode", p)
    assert dec.advised_plan(4, 32, 8, 8192, 128, torch.bfloat16, "h200") == (
        c["block_n"], c["num_warps"], c["num_stages"], c["num_splits"])  # fmt: skip
    assert dec.advised_plan(4, 32, 8, 8192, 128, torch.float32, "h200") is None  # fp32 keeps the wave rule
    g = default_config("grouped", {"experts": 128, "rows_per_expert": 64, "n": 1536, "k": 2048, "dtype": "bf16"})
    assert grouped_choose(64.0, 1536, 2048, torch.bfloat16, on_gpu=True, experts=128) == GroupedConfig(**g)


def _gen(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(torch.float16)


@pytest.mark.parametrize("m, n, k, layout", SHAPES[:5])
def test_proposed_gemm_configs_run_in_the_interpreter(m, n, k, layout):
    """The top 3 for the real shape, run at a small size (the tiles are the same; the interpreter runs them)."""
    sm, sn, sk = 37, 45, 70
    for a_ in advise("gemm", {"m": m, "n": n, "k": k, "layout": layout}, top_k=3):
        a = _gen(sm, sk, seed=1)
        b = _gen(sn, sk, seed=2).t() if layout == "nt" else _gen(sk, sn, seed=2)
        out = torch.full((sm, sn), float("nan"), dtype=torch.float16)
        matmul(a, b, out=out, config=Config(**a_.config))
        ref = a.double() @ b.double()
        assert torch.allclose(out.double(), ref, atol=2e-2 * ref.abs().max().item(), rtol=0), a_.tag


def test_proposed_attention_decode_grouped_configs_run_in_the_interpreter():
    q, k, v = _gen(1, 2, 40, 64, seed=3), _gen(1, 1, 40, 64, seed=4), _gen(1, 1, 40, 64, seed=5)
    kk, vv = k.expand(1, 2, 40, 64), v.expand(1, 2, 40, 64)
    ref = torch.softmax((q.double() @ kk.double().transpose(-1, -2)) / 8.0, -1) @ vv.double()
    for a_ in advise("attention", {"batch": 4, "heads": 32, "seq_q": 4096, "head_dim": 64}, top_k=2):
        out, _ = attention(q, k, v, config=ForwardConfig(**a_.config))
        assert torch.allclose(out.double(), ref, atol=2e-2), a_.tag
    qd = _gen(2, 4, 64, seed=6)
    kd, vd = _gen(2, 2, 300, 64, seed=7), _gen(2, 2, 300, 64, seed=8)
    kx, vx = kd.repeat_interleave(2, 1), vd.repeat_interleave(2, 1)
    s = (qd.double()[:, :, None, :] @ kx.double().transpose(-1, -2)) / math.sqrt(64)
    refd = (torch.softmax(s, -1) @ vx.double())[:, :, 0, :]
    for a_ in advise("decode", {"batch": 2, "heads": 4, "kv_heads": 2, "seq_len": 65536, "head_dim": 64}, top_k=2):
        c = a_.config
        out, _ = decode_attention(qd, kd, vd, [300, 300], num_splits=min(c["num_splits"], 4),
                                  tile=(c["block_n"], c["num_warps"], c["num_stages"]))  # fmt: skip
        assert torch.allclose(out.double(), refd, atol=2e-2), a_.tag
    x, w = _gen(3 * 9, 48, seed=9), _gen(3, 48, 40, seed=10) * 0.2
    offs = torch.tensor([9, 18, 27], dtype=torch.int32)
    refg = torch.cat([x[9 * e : 9 * (e + 1)].double() @ w[e].double() for e in range(3)])
    for a_ in advise("grouped", {"experts": 128, "rows_per_expert": 64, "n": 1536, "k": 2048}, top_k=2):
        y = grouped_matmul(x, w, offs, config=GroupedConfig(**a_.config))
        assert torch.allclose(y.double(), refg, atol=3e-2), a_.tag
