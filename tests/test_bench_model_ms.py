"""Every `tilewise bench` suite's rows carry model_ms (the time model's prediction for what ran)
beside the roofline floor predicted_ms. The suites' own row builders run here on the CPU (the interpreter runs
the kernels at tiny sizes; the timing is stubbed: one call of ours, fixed times), and each row's model_ms must be
`tilewise.model.predict` of the problem and config the row names.

Run: TRITON_INTERPRET=1 PYTHONPATH=src pytest tests/test_bench_model_ms.py
"""

from __future__ import annotations

import argparse
import types

import pytest
from helpers import interpreting

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

if not interpreting():
    pytest.skip("needs TRITON_INTERPRET=1", allow_module_level=True)

from tilewise.bench import harness  # noqa: E402
from tilewise.bench.suites import attention, decode, ffn, gemm, grouped, moe  # noqa: E402
from tilewise.bench.suites import sum as sum_suite  # noqa: E402
from tilewise.model.predict import predict  # noqa: E402

TAGS = {"gpu": "NVIDIA H200", "cpu": "test", "date": "2026-12-01", "torch": "t", "triton": "tr", "command": "c"}
OURS_MS, PEER_MS = 0.5, 0.7


def _args(suite, argv):
    p = argparse.ArgumentParser()
    suite.add_arguments(p)
    return p.parse_args(argv)


@pytest.fixture
def cpu(monkeypatch):
    """Suites on the CPU: tensors on "cpu", one call of ours per timing (its output is discarded), fixed times."""

    def time_pair(ours, peer, **kw):
        ours(0)
        return {"ours_ms": OURS_MS, "peer_ms": PEER_MS if peer is not None else None}

    for s in (attention, decode, ffn, gemm, grouped, moe, sum_suite):
        monkeypatch.setattr(s, "DEVICE", "cpu")
    monkeypatch.setattr(harness, "time_pair", time_pair)
    monkeypatch.setattr(harness, "env_tags", lambda command=None: dict(TAGS))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: types.SimpleNamespace(multi_processor_count=132))
    monkeypatch.setattr(decode, "_copy_tbps", lambda torch, do_bench: 4.0)
    monkeypatch.setattr(ffn, "infer_memory", lambda fn: 0.0)
    monkeypatch.setattr(ffn, "train_memory", lambda fn, inputs, grad: (1.0, 1.0))
    return time_pair


def _check(rows, kernel_of_row):
    assert rows
    for r in rows:
        assert r["model_ms"] is not None and r["model_ms"] > 0, (r["kernel"], r.get("model_error"))
        assert r["model_binding"], r["kernel"]
        assert r["predicted_ms"] > 0  # the roofline floor stays beside it
        kernel, problem, config = kernel_of_row(r)
        want = predict(kernel, problem, config, "h200")
        assert r["model_ms"] == pytest.approx(want.ms, rel=1e-12) and r["model_binding"] == want.binding


def test_gemm_rows(cpu):
    rows = gemm.run(_args(gemm, ["--shapes", "37x45x70,1x64x128", "--dtype", "fp16"]), lambda it, **kw: it)
    from tilewise.kernels.gemm import choose_config

    def spec(r):
        m, n, k = (int(x) for x in r["shape"].split("x"))
        cfg = gemm._config_dict(choose_config(m, n, k, "fp16", torch.device("cpu")))
        return "gemm", {"m": m, "n": n, "k": k, "dtype": "fp16", "layout": "nn"}, cfg

    _check(rows, spec)
    assert all(r["model_fraction"] == pytest.approx(r["model_ms"] / OURS_MS) for r in rows)


def test_attention_rows(cpu):
    rows = attention.run(_args(attention, ["--shapes", "1,2,1,40,32,1;2,2,2,33,64,0", "--dtype", "fp16"]),
                         lambda it, **kw: it)  # fmt: skip
    from tilewise.kernels.flash_attention import forward_config

    assert [r["kernel_path"] for r in rows] == ["triton", "triton"] and all(r["model_note"] is None for r in rows)

    def spec(r):
        b, h, hk, s, d, c = (1, 2, 1, 40, 32, True) if r["shape"] == rows[0]["shape"] else (2, 2, 2, 33, 64, False)
        cfg = forward_config(d, c, torch.float16, s, batch=b, heads=h, kv_heads=hk, seq_k=s)
        assert r["config"].startswith(f"BLOCK_M={cfg.block_m} BLOCK_N={cfg.block_n} warps={cfg.num_warps}")
        return attention.model_spec(b, h, hk, s, d, c, "fp16", cfg)

    _check(rows, spec)


def test_decode_rows(cpu):
    rows = decode.run(_args(decode, ["--shapes", "2,4,2,300", "--head-dim", "32"]), lambda it, **kw: it)
    from tilewise.kernels.decode import advised_plan

    def spec(r):
        bn, w, st, s = advised_plan(2, 4, 2, 300, 32, torch.bfloat16, "h200")
        p = {"batch": 2, "heads": 4, "kv_heads": 2, "seq_len": 300, "head_dim": 32, "dtype": "bf16"}
        return "decode", p, {"block_n": bn, "num_warps": w, "num_stages": st, "num_splits": s}

    _check(rows, spec)


def test_grouped_rows(cpu):
    import dataclasses

    from tilewise.kernels.grouped_gemm import choose_config

    rows = grouped.bench_shape("t", [9, 0, 20], 48, 40, "fp16", 1, TAGS, loop=True)
    cfg = choose_config(29 / 3, 40, 48, torch.float16, experts=3)
    _check(rows, lambda r: ("grouped", {"experts": 3, "rows_per_expert": 10, "n": 40, "k": 48, "dtype": "fp16"},
                            dataclasses.asdict(cfg)))  # fmt: skip


def test_moe_rows(cpu):
    import dataclasses

    from tilewise.kernels.moe_layer import moe_configs

    prob = (24, 32, 16, 4, 2, "softmax")
    row = moe.bench_config("tiny", prob, "fp16", 1, TAGS)
    up, down = moe_configs(24, 2, 4, 32, 16, torch.float16, True)
    p = {"tokens": 24, "d_model": 32, "d_ff": 16, "experts": 4, "top_k": 2, "gate": "softmax", "dtype": "fp16",
         "routing": True}  # fmt: skip
    _check([row], lambda r: ("moe", p, {"up": dataclasses.asdict(up), "down": dataclasses.asdict(down)}))
    assert row["model_binding"].split(".")[0] in ("gate_up_gemm", "down_gemm", "routing", "topk_sum")


def test_ffn_and_mhmoe_rows(cpu):
    rows = ffn.ffn_rows([20], [32], [64], 2, "fp16", 1, 10, dense=False, tags=TAGS)
    assert [r["kernel"] for r in rows] == ["flash_ffn_fwd", "flash_ffn_fwdbwd"]
    from tilewise.kernels.ffn import MODE

    def spec(r):
        p = {"tokens": 20, "heads": 2, "head_dim": 64, "intermediate": 32, "dtype": "fp16"}
        return "ffn", (p if r["kernel"] == "flash_ffn_fwd" else {**p, "backward": MODE}), {}

    _check(rows, spec)
    assert rows[1]["model_ms"] > rows[0]["model_ms"]  # the backward's GEMMs are added to the forward's
    mrows = ffn.moe_rows([16], 2, 32, 4, 16, 2, "fp16", 1, 10, tags=TAGS)
    _check(mrows, lambda r: ffn.mhmoe_model_spec(16, 2, 32, 4, 16, 2, torch.float16, False))
    assert "routing" not in predict(*ffn.mhmoe_model_spec(16, 2, 32, 4, 16, 2, torch.float16, False)).terms


def test_sum_rows(cpu):
    rows = sum_suite.run(_args(sum_suite, ["--sizes", "4K,64K:rows", "--cols", "64"]), lambda it, **kw: it)

    def spec(r):
        shape = [int(x) for x in r["shape"].split(" ")[0].split("x")]
        numel = shape[0] * (shape[1] if len(shape) == 2 else 1)
        return "sum", {"numel": numel, "dtype": "fp32", "outputs": 1 if len(shape) == 1 else shape[0]}, {}

    _check(rows, spec)
