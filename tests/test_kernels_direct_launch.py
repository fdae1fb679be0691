"""`kernels.utils.direct_launch`: after the first launch a Launcher calls the C entry point of Triton's
CudaLauncher with exactly the arguments Triton's own CudaLauncher.__call__ would pass it (checked against
the installed Triton's class: 3.9 here and in CI, 3.6 on the H200), and falls back to the compiled
kernel's runner where that is not known to be safe. No GPU: the compiled kernel is a stand-in."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from tilewise.kernels import utils  # noqa: E402

driver_mod = pytest.importorskip("triton.backends.nvidia.driver")

ARGS = ("x_tensor", 4096, 1.5)  # runtime arguments (the C launcher reads them; here they are recorded)
TAIL = (64, True)  # constexprs


class _FakeCudaLauncher:
    """Carries the attributes CudaLauncher.__call__ reads; `launch` records what reaches the C entry point."""

    def __init__(self, log, scratch=0):
        self.log = log
        self.global_scratch_size = scratch
        self.global_scratch_align = 1
        self.profile_scratch_size = 0
        self.profile_scratch_align = 1
        self.launch_cooperative_grid = False
        self.launch_pdl = True
        self.num_ctas = 1
        self.gsan_enabled = False
        self.arg_annotations = ("annotations",)
        self.kernel_signature = b"sig"

    def launch(self, *args):
        self.log.append(("launch", args))


class _FakeCompiled:
    def __init__(self, log, scratch=0):
        self.log = log
        self.run = _FakeCudaLauncher(log, scratch)
        self.function = 0xF00
        self.packed_metadata = (4, 1, 2048)

    def __getitem__(self, grid):
        return lambda *args: self.log.append(("runner", grid, args))


class _FakeDriver:
    def get_current_device(self):
        return 0

    def get_current_stream(self, device):
        return 0x5EED


@pytest.fixture
def fake_cuda(monkeypatch):
    """The stream and device queries the direct path makes, answered without a GPU."""
    monkeypatch.setattr(utils, "_raw_stream", lambda index: 0x5EED)
    monkeypatch.setattr(utils, "_get_device", lambda: 0)
    if utils._VERSION not in utils.DIRECT_LAUNCH_VERSIONS:
        pytest.skip(f"triton {triton.__version__}: no direct launch layout")


def _what_triton_passes(monkeypatch, compiled, grid):
    """The installed Triton's CudaLauncher.__call__ on the stand-in: the arguments it gives `launch`."""
    log = []
    cl = _FakeCudaLauncher(log)
    with monkeypatch.context() as m:
        m.setattr(type(triton.runtime.driver), "active", property(lambda self: _FakeDriver()))
        driver_mod.CudaLauncher.__call__(cl, *grid, 0x5EED, compiled.function, compiled.packed_metadata, None,
                                         None, None, *ARGS, *TAIL)  # fmt: skip
    return log


def test_direct_launch_passes_what_triton_passes(fake_cuda, monkeypatch):
    log = []
    compiled = _FakeCompiled(log)
    go = utils.direct_launch(compiled, (3, 2, 1), TAIL)
    assert go is not None
    go(*ARGS)
    assert log == _what_triton_passes(monkeypatch, compiled, (3, 2, 1))
    assert log and log[0][0] == "launch"


def test_a_launch_hook_takes_the_runner(fake_cuda, monkeypatch):
    """proton and other profilers set a launch hook: the runner calls it with the launch metadata."""
    log = []
    go = utils.direct_launch(_FakeCompiled(log), (1, 1, 1), TAIL)
    go(*ARGS)
    assert log[-1][0] == "launch"  # the hook chains are empty: straight to the C entry point

    def hook(meta):
        pass

    chain = triton.knobs.runtime.launch_exit_hook
    chain.add(hook)
    try:
        go(*ARGS)
    finally:
        chain.remove(hook)
    assert log[-1] == ("runner", (1, 1, 1), (*ARGS, *TAIL))
    monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", hook)  # a plain function counts as set
    go(*ARGS)
    assert log[-1][0] == "runner"


def test_scratch_or_other_versions_take_the_runner(fake_cuda, monkeypatch):
    assert utils.direct_launch(_FakeCompiled([], scratch=128), (1, 1, 1), TAIL) is None
    monkeypatch.setattr(utils, "_VERSION", (3, 7))
    assert utils.direct_launch(_FakeCompiled([]), (1, 1, 1), TAIL) is None


def test_launcher_goes_direct_after_the_first_call(fake_cuda, monkeypatch):
    monkeypatch.setattr(utils, "fast_launch_enabled", lambda: True)
    log = []

    class Kernel:
        arg_names = ["x", "n", "s", "BLOCK", "FLAG"]

        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                log.append(("jit", grid, args, kwargs))
                return _FakeCompiled(log)

            return launch

    launcher = utils.Launcher(Kernel(), (5,), {"BLOCK": 64, "FLAG": True}, num_warps=4)
    launcher(*ARGS)
    assert launcher.path == "direct"
    launcher(*ARGS)
    assert log[0] == ("jit", (5,), ARGS, {"BLOCK": 64, "FLAG": True, "num_warps": 4})
    assert log[1][0] == "launch" and log[1][1][:3] == (5, 1, 1)
