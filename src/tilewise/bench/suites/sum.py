"""`tilewise bench sum`: tilewise.kernels.sum against torch.sum, side by side.

Bytes come from `tilewise.model.traffic.sum_bytes`: the input read once. Inputs smaller than
three L2s are rotated through several copies so that L2 does not flatter either side.
"""

from __future__ import annotations

import argparse
from typing import Any

from tilewise import gpus as _gpus
from tilewise.bench import harness
from tilewise.bench.shapes import count, rotation
from tilewise.errors import InputError, parse_size
from tilewise.model import traffic

DEVICE = "cuda"  # the suites run on the GPU (a CPU smoke test may change it)
NAME = "sum"
HELP = "sum (fp32 / fp16 / bf16) vs torch.sum: 1 GiB and smaller inputs, full and per-dimension"

# (bytes, dim): the 1 GiB fp32 target, sizes below and around the 60 MB L2, and
# per-dimension reductions of a [rows, cols] matrix.
DEFAULT = "1G,256M,64M,16M,1M,1G:rows,1G:cols"
EXAMPLES = """examples:
  tilewise bench sum --sizes 1G
  tilewise bench sum --sizes 512M:rows,512M:cols --cols 50304 --dtype bf16
  tilewise bench sum --sizes 4K,64K,1M --json small_sums.json"""


def parse_cases(text: str) -> list[tuple[int, str | None]]:
    """'1G,64M,1G:rows' -> [(bytes, None), (bytes, None), (bytes, 'rows')]."""
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        size, _, dim = part.partition(":")
        if dim not in ("", "rows", "cols"):
            raise InputError(f"--sizes: the part after ':' must be 'rows' or 'cols', got {part!r}")
        out.append((parse_size("--sizes", size), dim or None))
    if not out:
        raise InputError(f"--sizes: expected sizes such as 1G,64M or 1G:rows, got {text!r}")
    return out


def check(args: argparse.Namespace) -> None:
    """Refuse bad arguments before any GPU work."""
    parse_cases(args.sizes)
    count("--cols", "the column count", args.cols)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--sizes",
        "--shapes",
        dest="sizes",
        default=DEFAULT,
        help="comma list of byte sizes (K, M, G suffixes); SIZE:rows sums each row of a [SIZE/(COLS*elt), COLS] "
        "matrix, SIZE:cols each column (default %(default)s)",
    )
    p.add_argument("--cols", default="8192", help="columns of the matrix for SIZE:rows / SIZE:cols (default 8192)")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "fp16", "bf16"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rep-ms", type=float, default=60)


def model_spec(numel: int, dtype: str, outputs: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(kernel, problem, config) of `tilewise.model.predict` (the composed "sum": bytes over the calibrated
    bandwidth, a latency and a launch; `tilewise.model.compose`)."""
    return "sum", {"numel": numel, "dtype": dtype, "outputs": outputs}, {}


def run(args: argparse.Namespace, progress: Any) -> list[dict[str, Any]]:

    import torch

    from tilewise.kernels.reduce import sum as tw_sum

    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    esize = torch.empty((), dtype=dtype).element_size()
    tags = harness.env_tags()
    gpu_key = harness.registry_key_for(tags["gpu"])
    l2 = _gpus.get(gpu_key).l2_bytes
    rows = []
    cases = parse_cases(args.sizes)
    for nbytes, dim in progress(cases, total=len(cases), desc="sum"):
        numel = max(1, nbytes // esize)
        cols = count("--cols", "the column count", args.cols)
        shape: tuple[int, ...]
        if dim is None:
            shape = (numel,)
            d = None
        else:
            shape = (max(1, numel // cols), cols)
            d = 1 if dim == "rows" else 0
        numel = shape[0] * (shape[1] if len(shape) == 2 else 1)
        outputs = 1 if d is None else shape[1 - d]
        mbytes = traffic.sum_bytes(numel, args.dtype, outputs=outputs)
        rot = rotation(mbytes, l2)
        xs = [torch.randn(shape, device=DEVICE, dtype=dtype) for _ in range(rot)]

        def ours(i: int, xs: list[Any] = xs, d: int | None = d) -> object:
            return tw_sum(xs[i], d)

        def peer(i: int, xs: list[Any] = xs, d: int | None = d) -> object:
            return torch.sum(xs[i]) if d is None else torch.sum(xs[i], d)

        t = harness.time_pair(
            ours,
            peer,
            rotate=rot,
            rounds=args.rounds,
            rep_ms=args.rep_ms,
        )
        label = "x".join(str(s) for s in shape) + ("" if d is None else f" dim={d}")
        rows.append(
            harness.make_row(
                kernel="sum",
                shape=label,
                dtype=args.dtype,
                peer="torch.sum",
                ours_ms=t["ours_ms"],
                peer_ms=t["peer_ms"],
                flops=traffic.sum_flops(numel),
                nbytes=mbytes,
                tags=tags,
                gpu_key=gpu_key,
                model_dtype="fp32",
                model=model_spec(numel, args.dtype, outputs),
                extra={
                    "rotate": rot,
                    **harness.timing_fields(t),
                },
            )
        )
        xs.clear()
    return rows
