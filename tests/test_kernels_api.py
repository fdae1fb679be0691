"""The public ops of tilewise.kernels are the functions, not modules, whatever was imported first."""

import importlib
import inspect

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

import tilewise.kernels as K  # noqa: E402


def test_every_public_op_is_a_callable_function_or_class():
    # import every submodule first: a submodule named like an op would shadow it
    for mod in set(K._OPS.values()):
        importlib.import_module(f"tilewise.kernels.{mod}")
    for name in K._OPS:
        obj = getattr(K, name)
        assert inspect.isfunction(obj) or inspect.isclass(obj), (name, obj)
    from tilewise.kernels import attention, flash_ffn, matmul, moe  # noqa: PLC0415

    for f in (attention, flash_ffn, matmul, moe):
        assert inspect.isfunction(f), f


def test_unknown_name():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        K.nope  # noqa: B018
