"""What the probes share: CUDA-graph timing (`tilewise.bench.timing`) and writing a result file with its GPU, date and versions.

A probe answers one question the `tilewise bench` suites do not (a bandwidth, a tile sweep, where host
time goes). Each writes one file `{"meta": {...}, "data": ...}`; `meta` comes from
`tilewise.bench.harness.env_tags` (GPU, date, torch, triton, host CPU, the command).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any


def parser(doc: str | None, default_out: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    p.add_argument("--out", default=default_out, help="result file to write (default %(default)s)")
    return p


def graph_ms(fn, rep: int = 40) -> float:
    """Median ms of CUDA-graph replays of fn(), about `rep` ms of them, the L2 flushed before each replay
    (`tilewise.bench.timing`: the timer every benchmark of tilewise uses)."""
    from tilewise.bench import timing

    g = timing.capture(lambda _i: fn())
    return timing.time_calls({"x": g}, rounds=1, reps=timing.reps_for(g, rep))["x"].median_ms


def save(path: str, data: Any) -> None:
    """Write {"meta": env_tags(command), "data": data} to `path` (rewritten after every step, so a cut run keeps its rows)."""
    from tilewise.bench.harness import env_tags

    command = "python " + " ".join([os.path.relpath(sys.argv[0]), *sys.argv[1:]])
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"meta": env_tags(command), "data": data}, f, indent=1)
