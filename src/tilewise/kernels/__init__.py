"""Triton kernels: GEMM, sum, attention, decode, grouped GEMM, FlashFFN, MH-MoE (needs the `kernels` extra: torch + triton).

Public ops are loaded lazily, so `import tilewise.kernels` costs nothing until one is used:

    from tilewise.kernels import matmul, sum, attention, decode_attention, grouped_matmul, moe, flash_ffn

Each op is also a torch custom op (`torch.ops.tilewise.<name>`, see `tilewise.kernels.custom_ops`):
the functions exported here call the kernel directly in eager mode and go through the registered op
when torch.compile traces them or autograd needs them, so compiled models, CUDA graphs and training
see them like torch's own ops.
"""

from __future__ import annotations

import importlib
from typing import Any

from tilewise.errors import require_extra

# public name -> module under tilewise.kernels that defines it. No module is named like an op:
# importing a submodule binds its name on the package, which would shadow a same-named op.
_OPS = {
    "matmul": "custom_ops",
    "sum": "custom_ops",
    "attention": "custom_ops",
    "decode_attention": "custom_ops",
    "grouped_matmul": "custom_ops",
    "grouped_matmul_dw": "custom_ops",
    "moe": "custom_ops",
    "moe_experts": "custom_ops",
    "flash_ffn": "custom_ops",
    "FlashFFNFunction": "ffn",
    "MultiHeadFFN": "layers",
    "MultiHeadMoE": "layers",
}


def __getattr__(name: str) -> Any:
    if name in _OPS:
        require_extra("torch", "kernels")
        require_extra("triton", "kernels")
        mod = importlib.import_module(f"tilewise.kernels.{_OPS[name]}")
        obj = getattr(mod, name)
        globals()[name] = obj  # later lookups skip __getattr__
        return obj
    raise AttributeError(f"module 'tilewise.kernels' has no attribute {name!r}")


__all__ = sorted(_OPS)
