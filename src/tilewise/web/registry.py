"""The explorer's panel registry: one entry per panel module, in the page's order.

Each module under `tilewise.web.panels` registers its endpoint with `@panel(...)`. A panel's
module imports the model functions it calls at the top, so a broken model module fails the
import of the explorer, loudly, instead of quietly hiding a panel.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError
from tilewise.web.params import Params


@dataclass(frozen=True)
class Panel:
    id: str
    title: str
    func: Callable[[Params], dict[str, Any]]
    params: frozenset[str]


PANELS: dict[str, Panel] = {}

# Page order: from the warp up (memory, divergence, occupancy, Tensor Cores, pipelines), then the GEMM
# from grid to Tensor Core, then MoE, then the advisor.
ORDER = (
    "hierarchy",
    "access",
    "divergence",
    "occupancy",
    "latency",
    "tiling",
    "tensorcore",
    "registers",
    "l2",
    "pipeline",
    "decode",
    "moe",
    "advisor",
)


def panel(
    id: str, title: str, params: tuple[str, ...]
) -> Callable[[Callable[[Params], dict[str, Any]]], Callable[[Params], dict[str, Any]]]:
    """Register the decorated function as the endpoint /api/<id>, accepting exactly `params`."""
    if id not in ORDER:
        raise ValueError(f"panel {id!r} has no place in the page order {ORDER}")
    if id in PANELS:
        raise ValueError(f"panel {id!r} registered twice")

    def wrap(func: Callable[[Params], dict[str, Any]]) -> Callable[[Params], dict[str, Any]]:
        PANELS[id] = Panel(id, title, func, frozenset(params))
        return func

    return wrap


def available() -> list[Panel]:
    """Every registered panel, in page order."""
    return sorted(PANELS.values(), key=lambda p: ORDER.index(p.id))


def call(panel_id: str, query: Mapping[str, str] | list[tuple[str, str]]) -> dict[str, Any]:
    """Run one endpoint. Raises KeyError for an unknown panel, InputError for bad input."""
    p = PANELS[panel_id]
    out: dict[str, Any] = clean(p.func(Params(query, p.params)))
    return out


def clean(v: Any) -> Any:
    """JSON-safe copy: inf and nan become None, tuples lists, objects with to_dict() their dicts."""
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    if hasattr(v, "to_dict"):
        return clean(v.to_dict())
    return str(v)


def gpu_summary(g: _gpus.GPU) -> dict[str, Any]:
    return {"key": g.key, "name": g.name, "arch": g.arch, "sms": g.sms}


def hopper_gpu(p: Params) -> _gpus.GPU:
    """The request's GPU, which must have wgmma (the Hopper panels' instruction)."""
    g = p.gpu()
    if not g.wgmma:
        hopper = ", ".join(x.key for x in _gpus.list() if x.wgmma)
        raise InputError(f"gpu must have wgmma (Hopper: {hopper}) for this panel, got {g.key}")
    return g
