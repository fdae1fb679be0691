"""Triton kernels for the seeds' problems (needs the `kernels` extra: torch + triton).

Public ops are loaded lazily, so `import tilewise.kernels` costs nothing until one is used:

    from tilewise.kernels import matmul, sum, attention, decode_attention, grouped_matmul, moe, flash_ffn
"""

from __future__ import annotations

import importlib

# public name -> module under tilewise.kernels that defines it. No module is named like an op:
# importing a submodule binds its name on the package, which would shadow a same-named op.
_OPS = {
    "matmul": "gemm",
    "sum": "reduce",
    "attention": "flash_attention",
    "decode_attention": "decode",
    "grouped_matmul": "grouped_gemm",
    "moe": "moe_layer",
    "flash_ffn": "ffn",
    "FlashFFNFunction": "ffn",
    "MultiHeadFFN": "ffn",
    "MultiHeadMoE": "mhmoe",
}


def __getattr__(name: str):
    if name in _OPS:
        from tilewise.errors import require_extra

        require_extra("torch", "kernels")
        require_extra("triton", "kernels")
        mod = importlib.import_module(f"tilewise.kernels.{_OPS[name]}")
        obj = getattr(mod, name)
        globals()[name] = obj  # later lookups skip __getattr__
        return obj
    raise AttributeError(f"module 'tilewise.kernels' has no attribute {name!r}")


__all__ = sorted(_OPS)
