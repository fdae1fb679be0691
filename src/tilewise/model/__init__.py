"""The analytical model: pure Python functions of a GPU spec and a problem (no torch).

One rule, one function: occupancy, traffic (FLOPs and bytes), roofline, and the
Hopper-specific rules (tensorcore, latency, pipeline, waves, decode) in modules named
after them.
"""

from tilewise.model.occupancy import Occupancy, occupancy

__all__ = ["Occupancy", "occupancy"]
