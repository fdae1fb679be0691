"""tilewise.kernels.utils: one of each shared launcher helper, and the rules it enforces across kernels/."""

from __future__ import annotations

import ast
import pathlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from tilewise import gpus  # noqa: E402
from tilewise.kernels import utils  # noqa: E402

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "tilewise"


def test_interpreting_follows_the_environment(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert utils.interpreting()
    for off in ("0", ""):
        monkeypatch.setenv("TRITON_INTERPRET", off)
        assert not utils.interpreting()
    monkeypatch.delenv("TRITON_INTERPRET")
    assert not utils.interpreting()


def test_cpu_plans_for_the_registry_gpu():
    cpu = torch.device("cpu")
    assert utils.sm_count(cpu) == gpus.get(utils.CPU_GPU).sms == 132
    assert utils.gpu_key(cpu) == utils.CPU_GPU
    assert utils.capability(cpu) == (0, 0)
    assert utils.current_stream(cpu) == 0


def test_counters_are_zeroed_kept_and_pooled():
    cpu = torch.device("cpu")
    a = utils.counters(cpu, 10)
    assert a.dtype == torch.int32 and a.numel() >= 10 and int(a.abs().sum()) == 0
    assert utils.counters(cpu, 5) is a  # kept between calls: no memset per call
    assert utils.counters(cpu, 5, pool="other") is not a
    big = utils.counters(cpu, 5000)
    assert big.numel() >= 5000 and int(big.abs().sum()) == 0


def test_flat_rows():
    t = torch.empty(2, 3, 5, 8)
    assert utils.flat_rows(t)
    assert not utils.flat_rows(t.transpose(1, 2))  # [B, S, H, D] memory read as [B, H, S, D]
    assert not utils.flat_rows(t[..., :4])  # rows of 4 inside rows of 8
    assert utils.flat_rows(torch.empty(4, 3, 5, 8)[:1])  # batch 1: its batch stride never matters
    assert not utils.flat_rows(torch.empty(2, 6, 5, 8)[:, ::2])


def test_signature_separates_what_a_plan_depends_on():
    x = torch.empty(64, 64)
    assert utils.signature(x) == utils.signature(torch.empty(64, 64))
    assert utils.signature(x) != utils.signature(x.t())
    assert utils.signature(x) != utils.signature(x.half())
    assert utils.signature(None) is None
    odd = torch.empty(65)[1:]  # 4-byte offset: not 16-byte aligned
    assert utils.signature(odd)[-1] is False and utils.signature(torch.empty(64))[-1] is True


def test_plan_cache_is_bounded():
    c = utils.PlanCache(limit=3)
    for i in range(3):
        c.put(i, i)
    assert len(c) == 3 and c.misses == 3
    c.put(99, 99)
    assert len(c) == 1 and c[99] == 99 and c.misses == 4


def test_long_kernel_follows_the_roofline():
    cpu = torch.device("cpu")
    assert not utils.long_kernel(cpu, 2 * 64**3, 3 * 64 * 64 * 2, torch.bfloat16)
    assert utils.long_kernel(cpu, 2 * 8192**3, 3 * 8192 * 8192 * 2, torch.bfloat16)  # ~1.1 ms
    assert utils.long_kernel(cpu, 0, 1e9, torch.float16)  # 1 GB streamed: ~210 us at 4.8 TB/s


class _Compiled:
    def __init__(self, log):
        self.log = log

    def __getitem__(self, grid):
        return lambda *args: self.log.append(("compiled", grid, args))


class _Kernel:
    """Stands in for a JITFunction: records how it is launched and returns a compiled kernel."""

    arg_names = ["x", "n", "BLOCK", "FLAG"]

    def __init__(self):
        self.log = []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.log.append(("jit", grid, args, kwargs))
            return _Compiled(self.log)

        return launch


def test_launcher_jit_first_then_the_compiled_kernel(monkeypatch):
    monkeypatch.setattr(utils, "fast_launch_enabled", lambda: True)
    k = _Kernel()
    launch = utils.Launcher(k, (3, 1), {"BLOCK": 64, "FLAG": True}, num_warps=4)
    launch("x0", 10)
    launch("x1", 10)
    launch("x2", 10)
    assert k.log[0] == ("jit", (3, 1), ("x0", 10), {"BLOCK": 64, "FLAG": True, "num_warps": 4})
    # every argument in signature order, the constexprs last: the call Triton's compiled kernel takes
    # (and a three-entry grid: the compiled kernel's runner reads grid[2])
    assert k.log[1:] == [("compiled", (3, 1, 1), ("x1", 10, 64, True)), ("compiled", (3, 1, 1), ("x2", 10, 64, True))]


def test_launcher_keeps_the_jit_path_when_unsafe(monkeypatch):
    monkeypatch.setattr(utils, "fast_launch_enabled", lambda: True)
    k = _Kernel()
    wrong_order = utils.Launcher(k, (1,), {"FLAG": True, "BLOCK": 64})  # not the signature's order
    wrong_order("x", 1)
    wrong_order("x", 1)
    assert [e[0] for e in k.log] == ["jit", "jit"]
    monkeypatch.setattr(utils, "fast_launch_enabled", lambda: False)  # interpreter, other triton, opt-out
    k2 = _Kernel()
    off = utils.Launcher(k2, (1,), {"BLOCK": 64, "FLAG": True})
    off("x", 1)
    off("x", 1)
    assert [e[0] for e in k2.log] == ["jit", "jit"]


def test_fast_launch_is_version_guarded(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delenv("TILEWISE_JIT_LAUNCH", raising=False)
    monkeypatch.setattr(utils, "_VERSION", (3, 6))
    assert utils.fast_launch_enabled()
    monkeypatch.setattr(utils, "_VERSION", (4, 0))
    assert not utils.fast_launch_enabled()
    monkeypatch.setattr(utils, "_VERSION", (3, 9))
    monkeypatch.setenv("TILEWISE_JIT_LAUNCH", "1")
    assert not utils.fast_launch_enabled()
    monkeypatch.delenv("TILEWISE_JIT_LAUNCH")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert not utils.fast_launch_enabled()


# --------------------------------------------------------------------------- one helper per job

_MINE = ("gemm", "reduce", "flash_attention", "decode", "grouped_gemm", "moe_layer", "ffn", "utils")
_REPEATED = {"_cdiv", "_next_pow2", "_pow2", "_interpreting", "_sm_count", "_num_sms", "_cuda_sms", "_flat_rows"}


def _files():
    kernels = [SRC / "kernels" / f"{m}.py" for m in _MINE]
    bench = sorted((SRC / "bench").rglob("*.py"))
    return kernels + bench


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_imports_and_no_local_copies(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tilewise"):
            private = [a.name for a in node.names if a.name.startswith("_")]
            assert not private, f"{path.name}:{node.lineno} imports private {private} from {node.module}"
        if isinstance(node, ast.FunctionDef) and path.name != "utils.py":  # utils holds the one copy
            assert node.name not in _REPEATED, f"{path.name}:{node.lineno} defines its own {node.name}"
    text = path.read_text()
    assert "-(-" not in text, f"{path.name}: an inline ceil division; use tilewise.util.cdiv"
    assert "triton.cdiv(" not in text and "triton.next_power_of_2(" not in text, (
        f"{path.name}: triton's jit helpers cost ~10 us per host call; use tilewise.util"
    )


@pytest.mark.parametrize("name", [m for m in _MINE if m != "utils"])
def test_configs_take_keywords(name):
    """`Config(128, 256, 64, 8, 1, 8, 3, True, ...)` is unreadable: kernel files build configs by keyword."""
    tree = ast.parse((SRC / "kernels" / f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.endswith("Config"):
            assert not node.args, f"{name}.py:{node.lineno}: {node.func.id}(...) with positional arguments"
