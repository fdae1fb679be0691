"""Decode: one new token per sequence, so the GEMM's M is the batch, and MMA fragments pad.

The GEMM article: a Tensor-Core fragment has 16 rows; at batch 1 only 1 of 16 carries
data (6.25%), at batch 64 all do. wgmma's M is 64, so on Hopper the padding is coarser.
"""

from __future__ import annotations

from tilewise.errors import positive_int

MMA_M = {"mma": 16, "wmma": 16, "mma.sync": 16, "wgmma": 64}


def fragment_fill(m: int, granularity: int = 16) -> float:
    """Share of the rows of the MMA fragments covering m rows that carry data."""
    m = positive_int("m", m)
    granularity = positive_int("granularity", granularity)
    padded = -(-m // granularity) * granularity
    return m / padded
