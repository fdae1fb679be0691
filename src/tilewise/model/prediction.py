"""A predicted launch: its time, the terms it is made of and the one that binds.

The record every part of the time model returns (`model.predict` for the kernel families, `model.compose`
for the ops composed from them); it sits below both so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tilewise.util import json_safe


@dataclass(frozen=True)
class Prediction:
    kernel: str
    ms: float
    terms: dict[str, float]  # name -> ms
    binding: str
    gpu: str
    calibrated: bool
    detail: dict[str, Any] = field(default_factory=dict)  # waves, programs, bytes, efficiencies

    def to_dict(self) -> dict[str, Any]:
        return json_safe(
            {
                "kernel": self.kernel,
                "ms": self.ms,
                "terms": dict(self.terms),
                "binding": self.binding,
                "gpu": self.gpu,
                "calibrated": self.calibrated,
                "detail": dict(self.detail),
            }
        )


__all__ = ["Prediction"]
