"""The benchmark harness every kernel of tilewise is measured with.

Rules (README, "How we measure"):
* ours and the peer run in one process, alternating round by round, on the same inputs;
* each timing is `triton.testing.do_bench` (CUDA events); the row keeps the median over rounds of the
  per-round medians, with p20/p80 over every repetition (`tilewise.bench.timing.quantiles`);
* memory-bound work rotates through several copies of its inputs (`rotate`), so a
  later repetition does not find its data in L2;
* each row carries the model's prediction (`predicted_ms`, from `tilewise.model.roofline`
  with the FLOP and byte counts of `tilewise.model.traffic`) beside the measurement;
* every row records the code that ran (`source_state`: version, commit, dirty) beside GPU, versions,
  host and command;
* with `--cuda-graph` (`set_cuda_graph(True)`) each side is also captured in a CUDA graph and its
  replays timed (`tilewise.bench.timing`), in the same alternating rounds: `ours_graph_ms` / `peer_graph_ms` is the GPU's
  time without Python, argument checks and launch cost, and `ours_host_ms` = eager - graph is
  what the host adds per call. `do_bench`'s L2 flush before each timed call hides only about
  70 us of host time, so a short call's eager time can be the host's, not the kernel's.

Only `time_pair` needs a GPU; rows and files are plain Python.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tilewise import gpus as _gpus
from tilewise import version as _version_module
from tilewise.advise.problems import FIELDS, KERNELS, normalize
from tilewise.bench import timing
from tilewise.errors import InputError
from tilewise.model import roofline
from tilewise.model.predict import predict

ROW_KEYS = (
    "kernel", "shape", "dtype", "peer", "ours_ms", "peer_ms", "speedup", "tflops", "tbps",
    "predicted_ms", "roofline_fraction", "gpu", "date", "torch", "triton", "command",
)  # fmt: skip


def env_tags(command: str | None = None) -> dict[str, Any]:
    """GPU name, date, versions, host CPU, the command, and the code that ran (`source_state`) for a result."""
    argv = ["tilewise", *sys.argv[1:]] if sys.argv and sys.argv[0] in ("-c", "") else sys.argv
    tags: dict[str, Any] = {
        "date": _dt.date.today().isoformat(),
        "command": command or " ".join(shlex.quote(a) for a in argv),
    }
    try:
        import torch

        tags["torch"] = torch.__version__
        tags["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except ImportError:
        tags["torch"], tags["gpu"] = "none", "cpu"
    # Host-bound rows depend on the CPU: a decode call spent ~220 us of host time on one H200 host, and was
    # hidden behind the GPU (< ~150 us) on another.
    tags["cpu"] = _cpu_model()
    try:
        import triton

        tags["triton"] = triton.__version__
    except ImportError:
        tags["triton"] = "none"
    tags.update(source_state())
    return tags


SOURCE_KEYS = ("version", "commit", "dirty")
TAG_KEYS = ("gpu", "cpu", "date", "torch", "triton", "command", *SOURCE_KEYS)  # what every row carries


def source_state() -> dict[str, Any]:
    """{"version", "commit", "dirty"}: the package version, the git commit of the tree that ran and whether
    its tracked files differed from that commit (True / False).

    TILEWISE_COMMIT (with TILEWISE_DIRTY: 1/true/yes or 0/false/no) when set: whoever copies a tree to a
    remote GPU machine knows its commit, and a copy can carry a stale .git of its own (seen on the device
    machine: a copy of a clean tree read as an older commit, dirty). Otherwise from git when
    tilewise runs from a source checkout (src/tilewise under a work tree); "unknown" for what neither says."""
    state: dict[str, Any] = {"version": _version_module.__version__, "commit": "unknown", "dirty": "unknown"}
    env_commit = os.environ.get("TILEWISE_COMMIT", "").strip()
    if env_commit:
        state["commit"] = env_commit
        flag = os.environ.get("TILEWISE_DIRTY", "").strip().lower()
        if flag in ("1", "true", "yes"):
            state["dirty"] = True
        elif flag in ("0", "false", "no"):
            state["dirty"] = False
        return state
    root = _checkout_root()
    if root is not None:
        head = _git(root, "rev-parse", "HEAD")
        status = _git(root, "status", "--porcelain", "--untracked-files=no")
        if head:
            state["commit"] = head
            state["dirty"] = bool(status) if status is not None else "unknown"
    return state


def _checkout_root() -> Any:
    """The work tree this package was imported from (…/src/tilewise), or None for an installed copy."""
    pkg = Path(__file__).resolve().parents[1]
    root = pkg.parents[1]
    if pkg.parent.name == "src" and (root / ".git").exists():
        return root
    return None


def _git(root: Any, *args: str) -> str | None:
    try:
        r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass

    return platform.processor() or platform.machine() or "unknown"


def registry_key_for(device_name: str) -> str:
    """The registry entry to predict with for a device name ('NVIDIA H200' -> 'h200')."""
    return _gpus.key_for_device(device_name)


_MODE = {"graph": False}


def set_cuda_graph(on: bool) -> None:
    """Also time CUDA-graph replays of both sides in `time_pair` (the `--cuda-graph` option)."""
    _MODE["graph"] = bool(on)


def time_pair(
    ours: Callable[[int], Any],
    peer: Callable[[int], Any] | None,
    *,
    rotate: int = 1,
    rounds: int = 5,
    warmup_ms: float = 25,
    rep_ms: float = 100,
) -> dict[str, float]:
    """Time `ours(i)` and `peer(i)` alternating for `rounds` rounds; `i` cycles over `rotate` input sets.

    Returns ours_ms / peer_ms (median of the per-round medians) with p20 / p80 over every timed call of
    every round (`tilewise.bench.timing.quantiles`). With `set_cuda_graph(True)` each side is also
    captured (`timing.capture`, one graph of its `rotate` calls) and its replays timed in the same rounds
    (`timing.time_calls`, the L2 flushed before each replay): `ours_graph_ms`, `peer_graph_ms`.
    """
    from triton.testing import do_bench

    def rotating(fn: Callable[[int], Any]) -> Callable[[], Any]:
        state = {"i": 0}

        def call() -> Any:
            i = state["i"]
            state["i"] = (i + 1) % rotate
            return fn(i)

        return call

    fns = {"ours": rotating(ours)}
    if peer is not None:
        fns["peer"] = rotating(peer)
    graphs: dict[str, timing.Graph] = {}
    notes: list[str] = []
    if _MODE["graph"]:
        raw = {"ours": ours, "peer": peer}
        for name in fns:
            try:
                side = raw[name]
                assert side is not None  # fns holds peer only when there is one
                graphs[name] = timing.capture(side, rotate, warmup=rotate, refuse_sync=True)
            except Exception as e:  # a side that syncs with the host (or allocates oddly) cannot be captured
                notes.append(f"{name}: not capturable ({type(e).__name__}: {str(e)[:120]})")
    medians: dict[str, list[float]] = {k: [] for k in [*fns, *(f"{g}_graph" for g in graphs)]}
    samples: dict[str, list[float]] = {k: [] for k in medians}
    reps: dict[str, int] = {}
    for r in range(rounds):
        for name, fn in fns.items():
            times = [float(x) for x in do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="all")]
            medians[name].append(timing.quantiles(times)[0])
            samples[name] += times
            if name in graphs:
                g = graphs[name]
                if name not in reps:  # as many replays per round as fit in rep_ms
                    reps[name] = timing.reps_for(g, rep_ms)
                t = timing.time_calls({name: g}, rounds=1, reps=reps[name], warm_round=r == 0)[name]
                medians[f"{name}_graph"].append(t.median_ms)
                samples[f"{name}_graph"] += t.samples_ms
    out: dict[str, Any] = {}
    for name in medians:
        _, p20, p80 = timing.quantiles(samples[name])
        out[f"{name}_ms"] = statistics.median(medians[name])
        out[f"{name}_p20_ms"] = p20
        out[f"{name}_p80_ms"] = p80
    if notes:
        out["graph_note"] = "; ".join(notes)
    graphs.clear()
    return out


def timing_fields(t: dict[str, Any]) -> dict[str, Any]:
    """The fields of a `time_pair` result that go into a row's `extra` besides ours_ms / peer_ms:
    p20/p80, and with --cuda-graph the graph times, their speedup and the host's share per call."""
    out = {k: v for k, v in t.items() if k.endswith(("p20_ms", "p80_ms", "graph_ms")) or k == "graph_note"}
    og, pg = t.get("ours_graph_ms"), t.get("peer_graph_ms")
    if og:
        out["ours_host_ms"] = t["ours_ms"] - og
    if pg:
        out["peer_host_ms"] = t["peer_ms"] - pg
    if og and pg:
        out["speedup_graph"] = pg / og
    return out


def progress(iterable: Any, total: int | None = None, desc: str | None = None, file: Any = None) -> Any:
    """A progress bar over a sweep: tqdm when installed, else a plain one-line bar on stderr.

    The device machine has no tqdm; the bar still shows item i of n, the elapsed time and an
    estimate of what is left.
    """
    try:
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, file=file or sys.stderr, dynamic_ncols=True)
    except ImportError:
        return _plain_progress(iterable, total, desc, file or sys.stderr)


def _plain_progress(iterable: Any, total: int | None, desc: str | None, file: Any) -> Any:
    items = list(iterable) if total is None else iterable
    n = total if total is not None else len(items)
    t0 = time.perf_counter()
    for i, item in enumerate(items):
        done = i / n if n else 1.0
        el = time.perf_counter() - t0
        eta = el / i * (n - i) if i else 0.0
        bar = "#" * int(24 * done) + "." * (24 - int(24 * done))
        print(f"\r{desc or ''} [{bar}] {i}/{n} {el:5.0f}s elapsed, ~{eta:4.0f}s left", end="", file=file, flush=True)
        yield item
    print(f"\r{desc or ''} [{'#' * 24}] {n}/{n} {time.perf_counter() - t0:5.0f}s", file=file, flush=True)


def make_row(
    *,
    kernel: str,
    shape: str,
    dtype: str,
    peer: str,
    ours_ms: float,
    peer_ms: float | None,
    flops: float,
    nbytes: float,
    tags: dict[str, str],
    gpu_key: str | None = None,
    model_dtype: str | None = None,
    extra: dict[str, Any] | None = None,
    model: tuple[str, dict[str, Any], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One result row. `flops` and `nbytes` must come from `tilewise.model.traffic`.

    `model` = (kernel, problem, config) in `tilewise.model.predict`'s terms adds `model_ms` (the time
    model's prediction for the config that ran, beside the roofline floor `predicted_ms`), its binding
    term and `model_fraction` (model_ms / ours_ms)."""
    key = gpu_key or registry_key_for(tags.get("gpu", ""))
    pred = roofline.time(key, flops, nbytes, model_dtype or dtype)
    row: dict[str, Any] = {
        "kernel": kernel,
        "shape": shape,
        "dtype": dtype,
        "peer": peer,
        "ours_ms": ours_ms,
        "peer_ms": peer_ms,
        "speedup": (peer_ms / ours_ms) if (peer_ms and ours_ms) else None,
        "tflops": flops / (ours_ms * 1e-3) / 1e12 if ours_ms else None,
        "tbps": nbytes / (ours_ms * 1e-3) / 1e12 if ours_ms else None,
        "peer_tflops": flops / (peer_ms * 1e-3) / 1e12 if peer_ms else None,
        "peer_tbps": nbytes / (peer_ms * 1e-3) / 1e12 if peer_ms else None,
        "predicted_ms": pred.time_s * 1e3,
        "predicted_bound": pred.bound,
        "roofline_fraction": (pred.time_s * 1e3) / ours_ms if ours_ms else None,
        "flops": flops,
        "bytes": nbytes,
        "model_gpu": key,
        **{k: tags.get(k) for k in TAG_KEYS},
    }
    if model is not None:
        row.update(model_columns(*model, key))
        row["model_fraction"] = row["model_ms"] / ours_ms if (row["model_ms"] and ours_ms) else None
    if extra:
        row.update(extra)
    return row


def model_columns(
    kernel: str, problem: dict[str, Any], config: dict[str, Any], gpu_key: str = _gpus.DEFAULT_GPU
) -> dict[str, Any]:
    """{"model_ms", "model_binding"} of `tilewise.model.predict` (None with "model_error" when it refuses).

    The advisor's families are normalised by `tilewise.advise.problems`; the composed ones (moe, ffn, sum:
    `tilewise.model.compose`) check their own fields."""
    try:
        if kernel in KERNELS:  # keys only the time model reads (decode's ragged `total_keys`) pass; predict checks them
            known = {k: v for k, v in problem.items() if k in FIELDS[kernel]}
            problem = {**{k: v for k, v in problem.items() if k not in known}, **normalize(kernel, known)}
        p = predict(kernel, problem, config, gpu_key)
    except (InputError, KeyError) as e:
        return {"model_ms": None, "model_binding": None, "model_error": str(e)[:160]}
    return {"model_ms": p.ms, "model_binding": p.binding}


def write_rows(path: str, rows: list[dict[str, Any]], *, meta: dict[str, Any] | None = None) -> None:
    """Write rows as JSON: {"meta": {...}, "rows": [...]}."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"meta": meta or {}, "rows": rows}, f, indent=1)


def read_rows(path: str) -> list[dict[str, Any]]:
    with open(path) as f:
        rows: list[dict[str, Any]] = json.load(f)["rows"]
        return rows


def format_table(rows: list[dict[str, Any]], cols: Sequence[str] | None = None) -> str:
    """A plain-text table of rows (for the terminal and the README)."""
    if cols is None and rows and "ours_us" in rows[0]:  # host cost per call (`bench overhead`)
        cols = ["kernel", "shape", "dtype", "peer", "ours_us", "peer_us", "extra_us", "within_target", "cpu"]
    if cols is None:
        cols = ["kernel", "shape", "dtype", "ours_ms", "peer_ms", "speedup", "tflops", "tbps", "roofline_fraction"]
        if any("ours_graph_ms" in r for r in rows):
            cols[6:6] = ["ours_graph_ms", "peer_graph_ms", "speedup_graph"]
        if any(r.get("model_ms") is not None for r in rows):  # the time model beside the floor's fraction
            cols += ["model_ms", "model_binding"]
    cols = list(cols)
    cells = [[_fmt(r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(x[i]) for x in cells)) if cells else len(c) for i, c in enumerate(cols)]
    line = " | ".join(c.ljust(w) for c, w in zip(cols, widths))
    sep = "-|-".join("-" * w for w in widths)
    body = [" | ".join(x.ljust(w) for x, w in zip(row, widths)) for row in cells]
    return "\n".join([line, sep, *body])


def markdown_table(rows: list[dict[str, Any]], cols: Sequence[str] | None = None) -> str:
    """The rows as a GitHub markdown table (for the README sections)."""
    cols_given = cols is not None
    cols = list(
        cols
        or ("shape", "dtype", "ours_ms", "peer_ms", "speedup", "tflops", "tbps", "predicted_ms", "roofline_fraction")
    )
    if not cols_given and any(r.get("model_ms") is not None for r in rows):
        cols += ["model_ms", "model_binding"]
    head = "| " + " | ".join(cols) + " |"
    sep = "|" + "|".join("---" if c in ("kernel", "shape", "dtype", "peer", "config") else "---:" for c in cols) + "|"
    body = ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join([head, sep, *body])


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 100:
            return f"{v:.0f}"
        if abs(v) >= 1:
            return f"{v:.3g}"
        return f"{v:.3g}"
    return str(v)


__all__ = [
    "ROW_KEYS",
    "SOURCE_KEYS",
    "TAG_KEYS",
    "env_tags",
    "format_table",
    "make_row",
    "markdown_table",
    "progress",
    "read_rows",
    "registry_key_for",
    "set_cuda_graph",
    "source_state",
    "time_pair",
    "timing_fields",
    "write_rows",
]
