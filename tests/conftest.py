"""Fixtures every test shares (the helpers themselves live in tests/helpers.py).

- ``_seed`` (autouse): seeds Python, NumPy and torch before each test from the test's id; the ``seed``
  fixture gives that value and ``rng`` a NumPy Generator made from it.
- Markers: ``gpu`` tests skip only when there is no CUDA device; ``kernel`` tests (Triton kernels)
  skip unless ``TRITON_INTERPRET=1`` (CPU) or a CUDA device is there. ``device`` is where they allocate.
- ``poison``: ``poison(owner, *names)`` makes the allocators ``owner.name`` hand out poisoned memory.
- ``no_tf32``: fp32 matmuls in full fp32 for the test; the previous torch setting comes back afterwards.
- Hypothesis runs under the ``tilewise`` profile: no deadline (a shared 2-core machine can make any
  example slow; a hang is caught by pytest-timeout, not by a per-example clock), no example database (no
  state shared between xdist workers or carried from one run to the next), generation that may be slow,
  and under ``CI`` derandomized (the same examples every run). ``HYPOTHESIS_PROFILE`` picks another.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from helpers import cuda_available, interpreting, kernel_device, poison_allocations, seed_everything, seed_for
from hypothesis import HealthCheck, settings

settings.register_profile(
    "tilewise",
    deadline=None,
    database=None,
    derandomize=bool(os.environ.get("CI")),
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "tilewise"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kernel: runs Triton kernels (TRITON_INTERPRET=1 on the CPU, or a CUDA GPU)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is not None and not cuda_available():
        pytest.skip("needs a CUDA GPU")
    if item.get_closest_marker("kernel") is not None and not (interpreting() or cuda_available()):
        pytest.skip("needs TRITON_INTERPRET=1 (CPU) or a CUDA GPU")


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    return seed_for(request.node.nodeid)


@pytest.fixture(autouse=True)
def _seed(seed: int) -> None:
    seed_everything(seed)


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.fixture
def device() -> str:
    return kernel_device()


@pytest.fixture
def poison(monkeypatch: pytest.MonkeyPatch):
    def apply(owner, *names: str) -> None:
        poison_allocations(monkeypatch, owner, *names)

    return apply


@pytest.fixture
def no_tf32():
    torch = pytest.importorskip("torch")
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
