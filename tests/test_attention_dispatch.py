"""Dispatch between the Gluon FA3 kernel and the Triton kernel, and the Gluon config rules (CPU only).

`tilewise.kernels.attention` takes the Gluon kernel only on a Hopper GPU, on a Triton version the
GPU tests passed on, for fp16/bf16, head dims 64/128/256, a positive scale and TMA-legal layouts;
any failure of it falls back to the Triton kernel with the same results.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from tilewise.kernels import attention_gluon as ag  # noqa: E402
from tilewise.kernels import flash_attention as fa  # noqa: E402


class FakeCuda:
    """Just what `use_gluon` reads of a tensor: a CUDA bf16 [B, H, S, D] tensor on device 0."""

    def __init__(self, shape=(2, 4, 100, 128), dtype=torch.bfloat16, strides=None, ptr=1 << 20, esize=2):
        self.shape = shape
        self.dtype = dtype
        self.is_cuda = True
        self.device = torch.device("cuda", 0)
        B, H, S, D = shape
        self._strides = strides or (H * S * D, S * D, D, 1)
        self._ptr = ptr
        self._esize = esize

    def stride(self, i):
        return self._strides[i]

    def data_ptr(self):
        return self._ptr

    def element_size(self):
        return self._esize


@pytest.fixture
def hopper(monkeypatch):
    """Pretend: device 0 is an sm 9.0 GPU and the installed Triton is a verified one."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TILEWISE_GLUON", raising=False)
    monkeypatch.setattr(ag, "_device_ok", lambda index: True)
    monkeypatch.setattr(ag, "GLUON_VERIFIED", (triton.__version__,))
    monkeypatch.setattr(ag, "_FAILED", [])
    return monkeypatch


def test_gluon_taken_on_verified_hopper(hopper):
    if not ag.gluon_available():
        pytest.skip("this Triton lacks the Gluon names the kernel uses")
    t = FakeCuda()
    assert ag.use_gluon(t, t, t, None)
    assert ag.use_gluon(t, t, t, 0.1)
    t256 = FakeCuda(shape=(1, 2, 7, 256))
    assert ag.use_gluon(t256, t256, t256, None)


def test_unverified_triton_falls_back(hopper):
    hopper.setattr(ag, "GLUON_VERIFIED", ("0.0.0",))
    t = FakeCuda()
    assert not ag.use_gluon(t, t, t, None)


@pytest.mark.parametrize(
    "why,q",
    [
        ("fp32", FakeCuda(dtype=torch.float32, esize=4)),
        ("head dim 32", FakeCuda(shape=(2, 4, 100, 32))),
        ("head dim 64: the Triton kernel measured as fast or faster", FakeCuda(shape=(2, 4, 100, 64))),
        ("head dim 16", FakeCuda(shape=(2, 4, 100, 16))),
        ("last dim strided", FakeCuda(strides=(4 * 100 * 256, 100 * 256, 256, 2))),
        ("row stride not 16-byte aligned", FakeCuda(strides=(4 * 100 * 132, 100 * 132, 132 + 1, 1))),
        ("base not 16-byte aligned", FakeCuda(ptr=(1 << 20) + 8)),
    ],
)
def test_unsupported_inputs_fall_back(hopper, why, q):
    k = FakeCuda(shape=q.shape)
    assert not ag.use_gluon(q, k, k, None), why


def test_scale_and_switches(hopper):
    t = FakeCuda()
    assert not ag.use_gluon(t, t, t, -0.5)  # the unmasked softmax multiplies the row max by the scale
    assert not ag.use_gluon(t, t, t, 0.0)
    hopper.setenv("TILEWISE_GLUON", "0")
    assert not ag.use_gluon(t, t, t, None)
    hopper.delenv("TILEWISE_GLUON")
    hopper.setenv("TRITON_INTERPRET", "1")
    assert not ag.use_gluon(t, t, t, None)


def test_cpu_tensors_never_take_gluon(hopper):
    q = torch.zeros(1, 2, 8, 64, dtype=torch.float16)
    assert not ag.use_gluon(q, q, q, None)


def test_after_a_failure_the_gluon_path_is_off(hopper):
    if not ag.gluon_available():
        pytest.skip("this Triton lacks the Gluon names the kernel uses")
    t = FakeCuda()
    assert ag.use_gluon(t, t, t, None)
    with pytest.warns(RuntimeWarning, match="Triton kernel"):
        ag.gluon_failed(RuntimeError("out of resources: shared memory"))
    assert not ag.use_gluon(t, t, t, None)


import os  # noqa: E402

needs_interpreter = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET", "0") in ("", "0"), reason="runs the Triton kernel: needs TRITON_INTERPRET=1"
)


def _ref(q, k, v, causal):
    g = q.shape[1] // k.shape[1]
    k = k.double().repeat_interleave(g, 1)
    v = v.double().repeat_interleave(g, 1)
    s = q.double() @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = q.shape[2], k.shape[2]
        i = torch.arange(sq)[:, None]
        j = torch.arange(sk)[None, :]
        s = s.masked_fill(j > i + sk - sq, float("-inf"))
    return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)


@needs_interpreter
def test_failure_of_gluon_falls_back_to_triton(monkeypatch):
    """A Gluon compile/resource error never reaches the user: the Triton kernel answers (interpreter)."""
    monkeypatch.setattr(ag, "_FAILED", [])
    calls = []

    def boom(*a, **kw):
        calls.append(1)
        raise RuntimeError("out of resources: Required: 262144, Hardware limit: 232448")

    monkeypatch.setattr(fa, "use_gluon", lambda *a: True)
    monkeypatch.setattr(fa, "gluon_attention", boom)
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(1, 4, 37, 64, generator=gen).half()
    k = torch.randn(1, 2, 45, 64, generator=gen).half()
    v = torch.randn(1, 2, 45, 64, generator=gen).half()
    with pytest.warns(RuntimeWarning):
        out, lse = fa.attention(q, k, v, causal=True)
    assert calls == [1]
    ro, rl = _ref(q, k, v, True)
    assert (out.double() - ro).abs().max() < 4e-3
    assert (lse.double() - rl).abs().max() < 1e-3


@needs_interpreter
def test_interpreter_never_calls_gluon(monkeypatch):
    monkeypatch.setattr(fa, "gluon_attention", lambda *a, **kw: pytest.fail("Gluon kernel called on the CPU"))
    gen = torch.Generator().manual_seed(6)
    q = torch.randn(1, 2, 33, 64, generator=gen).half()
    out, lse = fa.attention(q, q, q, causal=False)
    ro, rl = _ref(q, q, q, False)
    assert (out.double() - ro).abs().max() < 4e-3


@pytest.mark.parametrize("d", ag.HEAD_DIMS)
@pytest.mark.parametrize("design", ag.DESIGNS)
def test_config_fits_the_model_budgets(d, design):
    """Q + stages x (K, V) stays under the 227 KB a block may opt into; the ring is as deep as that allows."""
    from tilewise.model.tensorcore import register_budget, smem_budget

    cfg = ag.gluon_config(d, design)
    sm = smem_budget(d, cfg.block_n, cfg.rows_per_consumer, cfg.stages, "bf16", "h100-sxm", cfg.consumers)
    assert sm.fits
    assert cfg.rows_per_consumer * cfg.consumers == ag.ROWS_PER_CTA
    if design == "serial":
        assert cfg.stages == 1
    else:
        deeper = smem_budget(d, cfg.block_n, cfg.rows_per_consumer, cfg.stages + 1, "bf16", "h100-sxm", cfg.consumers)
        assert cfg.stages == 4 or deeper.total_bytes > deeper.limit_bytes - 2048
    assert register_budget(d, cfg.block_n, 64, "bf16", "h100-sxm", limit=cfg.consumer_regs).fits
    assert (design == "pingpong") == (cfg.pingpong and cfg.consumers == 2)


def test_head_group_fits_l2():
    # B4 H32 S4096 D128 bf16: K+V of one head = 2 MiB; 0.4 x 60 MiB of L2 holds 12 heads
    assert ag.head_group(128, 4096, 128, 2, fraction=0.4) == 12
    assert ag.head_group(128, 4096, 128, 2, fraction=0.1) == 3
    assert ag.head_group(3, 4096, 128, 2) == 3
    assert ag.head_group(8, 10**7, 256, 2) == 1


@pytest.mark.skipif(not ag.gluon_available() or triton.__version__ != "3.6.0", reason="sm_90a build needs triton 3.6")
def test_builds_for_sm90_without_spills():
    r = ag.compile_sm90("pingpong", 128, "bf16", causal=True)
    assert r["stack_bytes"] == 0
    assert r["shared_bytes"] <= 232448
    assert r["asm"]["ptx"].count("setmaxnreg") > 0
