"""A report: the walk from a problem to its numbers, as text for people and JSON for tools.

Every explain kind builds a `Report` of `Step`s from the grid down to the hardware. A step has a
key (its JSON key), a title, a few lines of prose with the numbers in them, and the
numbers themselves in `values`. `Report.to_json()` is the object `--json` prints:

    {"kind": ..., "title": ..., "gpu": {...}, "inputs": {...},
     "<step key>": {...values...}, ..., "advice": [...]}
"""

from __future__ import annotations

import json
import math
import textwrap
from dataclasses import dataclass, field
from typing import Any

from tilewise import gpus as _gpus
from tilewise.gpus import GPU


@dataclass
class Step:
    key: str
    title: str
    lines: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    def say(self, text: str) -> Step:
        self.lines.append(text)
        return self


@dataclass
class Report:
    kind: str
    title: str
    gpu: dict[str, Any]
    inputs: dict[str, Any]
    steps: list[Step] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    # Said before the steps: where the GPU figures come from, and inputs outside what the analysis covers.
    notes: list[str] = field(default_factory=list)

    @classmethod
    def on_gpu(cls, kind: str, title: str, gpu: GPU, inputs: dict[str, Any]) -> Report:
        """A report about `gpu`: its figures' sources in `gpu`, and the first note says which were measured."""
        r = cls(kind=kind, title=title, gpu=gpu_info(gpu), inputs=inputs)
        r.notes.append(provenance_line(gpu))
        return r

    def step(self, key: str, title: str, **values: Any) -> Step:
        s = Step(key, title, [], dict(values))
        self.steps.append(s)
        return s

    def __getitem__(self, key: str) -> dict[str, Any]:
        for s in self.steps:
            if s.key == key:
                return s.values
        raise KeyError(key)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "title": self.title,
            "gpu": _clean(self.gpu),
            "inputs": _clean(self.inputs),
            "notes": list(self.notes),
        }
        for s in self.steps:
            out[s.key] = _clean(s.values)
        out["advice"] = list(self.advice)
        return out

    def dumps(self) -> str:
        # allow_nan=False: `_clean` turned inf/nan into null; anything left would be a bug, not bad JSON.
        return json.dumps(self.to_json(), indent=2, allow_nan=False)

    def render(self, width: int = 92) -> str:
        out = [self.title, "=" * min(len(self.title), width), ""]
        for n in self.notes:
            out.extend(textwrap.wrap(n, width, break_on_hyphens=False))
        if self.notes:
            out.append("")
        for i, s in enumerate(self.steps, 1):
            out.append(f"{i}. {s.title}")
            for line in s.lines:
                wrapped = textwrap.wrap(line, width - 3, subsequent_indent="   ", break_on_hyphens=False)
                out.extend("   " + w if j == 0 else w for j, w in enumerate(wrapped)) if wrapped else out.append("")
            out.append("")
        if self.advice:
            out.append("What would help")
            for a in self.advice:
                wrapped = textwrap.wrap(a, width - 4, subsequent_indent="    ", break_on_hyphens=False)
                out.append("  - " + wrapped[0])
                out.extend(wrapped[1:])
        return "\n".join(out).rstrip() + "\n"


def _clean(v: Any) -> Any:
    """JSON-safe copy: inf/nan become None, tuples lists, dataclass-likes their dicts."""
    if isinstance(v, float):
        return None if (math.isinf(v) or math.isnan(v)) else v
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if hasattr(v, "to_dict"):
        return _clean(v.to_dict())
    return v


# Where the GPU figures a report uses come from.

# The registry fields every report's figures rest on (peak FLOP/s, bandwidths, on-chip limits).
REPORT_FIELDS = (
    "sms",
    "tensor_clock_mhz",
    "dense_macs_per_tc_per_cycle",
    "hbm_bytes_per_s",
    "l2_bytes",
    "l2_bytes_per_s",
    "smem_per_block_optin",
    "regs_per_sm",
)


def figure_kind(source: str) -> str:
    """'measured' (on a device), 'estimate' (an order-of-magnitude guess) or 'datasheet' (published or derived)."""
    s = source.lower()
    if s.startswith(_gpus.MEASURED_PREFIXES):
        return "measured"
    if s.startswith(_gpus.ESTIMATE_PREFIX):
        return "estimate"
    return "datasheet"


def gpu_info(g: GPU) -> dict[str, Any]:
    """The report's `gpu` object: key, name, arch and, per figure used, its source and kind."""
    figures = {f: {"kind": figure_kind(g.source(f)), "source": g.source(f)} for f in REPORT_FIELDS}
    return {"key": g.key, "name": g.name, "arch": g.arch, "figures": figures}


def provenance_line(g: GPU) -> str:
    """One sentence saying which of the GPU's figures were measured on a device and which were not."""
    info = gpu_info(g)["figures"]
    user = sorted({v["source"].split(":")[0] for v in info.values() if v["source"].startswith("user file ")})
    if user:  # a user's GPU file: its figures are the user's, none measured or checked against a device here
        return (
            f"The {g.name} figures come from {', '.join(user)} (datasheet figures as given, none measured by "
            f"tilewise; see `tilewise gpus {g.key}`)."
        )
    measured = [f for f, v in info.items() if v["kind"] == "measured"]
    estimated = [f for f, v in info.items() if v["kind"] == "estimate"]
    if not measured:
        head = f"Every {g.name} figure here is datasheet-derived (none measured on a device)"
    else:
        head = f"Measured on a device: {', '.join(measured)}; the other {g.name} figures are datasheet-derived"
    if estimated:
        head += f"; {', '.join(estimated)} is an order-of-magnitude estimate"
    return head + " (see `tilewise gpus " + g.key + "`)."


# Number formatting shared by all reports.


def fmt_bytes(n: float) -> str:
    n = float(n)
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n:.0f} B"


def fmt_kib(n: float) -> str:
    """Binary kilobytes, as CUDA writes shared-memory sizes (2 KB = 2048 bytes)."""
    k = n / 1024
    return f"{k:.0f} KB" if float(k).is_integer() else f"{k:.2f} KB"


def fmt_time(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def fmt_flops(f: float) -> str:
    for unit, size in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if f >= size:
            return f"{f / size:.4g} {unit}"
    return f"{f:.0f} FLOP"


def fmt_intensity(x: float) -> str:
    """FLOP per byte: whole numbers from 10 up (295), two significant digits below (0.5, not "0")."""
    if not math.isfinite(x):
        return "unbounded" if x > 0 else "undefined"
    return f"{x:.0f}" if abs(x) >= 10 else f"{x:.2g}"


def pct(x: float) -> str:
    return f"{100 * x:.3g}%"
