"""Triton kernels for the seeds' problems (needs the `kernels` extra: torch + triton).

Public ops are loaded lazily, so `import tilewise.kernels` costs nothing until one is used:

    from tilewise.kernels import matmul, sum, attention, decode_attention, grouped_matmul, moe, flash_ffn
"""

from __future__ import annotations

import importlib

# public name -> module under tilewise.kernels that defines it
_OPS = {
    "matmul": "matmul",
    "sum": "reduce",
    "attention": "attention",
    "decode_attention": "decode",
    "grouped_matmul": "grouped_gemm",
    "moe": "moe",
    "flash_ffn": "flash_ffn",
    "FlashFFNFunction": "flash_ffn",
    "MultiHeadFFN": "flash_ffn",
    "MultiHeadMoE": "mhmoe",
}


def __getattr__(name: str):
    if name in _OPS:
        from tilewise.errors import require_extra

        require_extra("torch", "kernels")
        require_extra("triton", "kernels")
        mod = importlib.import_module(f"tilewise.kernels.{_OPS[name]}")
        return getattr(mod, name)
    raise AttributeError(f"module 'tilewise.kernels' has no attribute {name!r}")


__all__ = sorted(_OPS)
