"""`tilewise advise attention --backward`: the attention backward's tiles ranked by its time model.

The space is every dK/dV tile whose registers and shared memory fit (`tilewise.model.attention_backward.space`),
in both dQ modes; the ranking is `tilewise.model.attention_backward.predict`. Where the Tensor Cores bind, the
model has no per-tile efficiency yet and ranks tiles of one dQ mode alike: the kernel launches the measured table
`tilewise.model.attention_backward.SHIPPED` (`shipped`), which the report names first with its prediction.
"""

from __future__ import annotations

from typing import Any

from tilewise import gpus as _gpus
from tilewise.advise import problems
from tilewise.errors import InputError
from tilewise.model import attention_backward as model


def _entry(p: dict[str, Any], c: dict[str, Any], gpu: str, useful: int) -> dict[str, Any]:
    pred = model.predict(p, c, gpu)
    tag = f"bm{c['block_m']}-bn{c['block_n']}-w{c['num_warps']}-s{c['num_stages']}-dq_{c['dq']}"
    if "dq_block_m" in c and c["dq"] == "separate":
        tag += f"-q{c['dq_block_m']}x{c['dq_block_n']}"
    return {"config": c, "tag": tag, "predicted_ms": pred.ms, "tflops": useful / (pred.ms * 1e-3) / 1e12,
            "binding": pred.binding, "terms": pred.terms, "calibrated": pred.calibrated}  # fmt: skip


def shipped(problem: dict[str, Any], gpu: str = _gpus.DEFAULT_GPU) -> dict[str, Any]:
    """The entry (as `advise_backward`'s) of the tiles `tilewise.kernels.attention_backward` launches."""
    p = problems.normalize("attention", problem)
    useful = model.useful_flops(p["batch"], p["heads"], p["seq_q"], p["seq_k"], p["head_dim"], p["causal"])
    return _entry(p, model.shipped_config(int(p["head_dim"])), gpu, useful)


def advise_backward(problem: dict[str, Any], gpu: str = _gpus.DEFAULT_GPU, top_k: int = 5) -> list[dict[str, Any]]:
    """[{config, tag, predicted_ms, tflops, binding, terms}], fastest first, for the forward's problem keys."""
    p = problems.normalize("attention", problem)
    if p["dtype"] not in ("bf16", "fp16"):
        raise InputError(f"attention --backward models bf16 and fp16, got dtype {p['dtype']!r}")
    useful = model.useful_flops(p["batch"], p["heads"], p["seq_q"], p["seq_k"], p["head_dim"], p["causal"])
    return [_entry(p, c, gpu, useful) for c, _ in model.rank(p, gpu, top_k)]


def render(problem: dict[str, Any], advice: list[dict[str, Any]], gpu: str) -> str:
    lines = [f"tilewise advise attention --backward on {gpu} (time model: tilewise.model.attention_backward)"]
    lines.append(f"{'#':>2} {'config':<34} {'pred us':>9} {'TFLOP/s':>8}  binding")
    s = shipped(problem, gpu)
    lines.append(f"{'k':>2} {s['tag']:<34} {s['predicted_ms'] * 1e3:>9.1f} {s['tflops']:>8.1f}  {s['binding']}  "
                 "(k: what the kernel launches)")  # fmt: skip
    for i, a in enumerate(advice, 1):
        lines.append(f"{i:>2} {a['tag']:<34} {a['predicted_ms'] * 1e3:>9.1f} {a['tflops']:>8.1f}  {a['binding']}")
    lines.append("")
    lines.append(
        f"work: {model.GEMMS['atomic']} GEMMs per (query, key) pair with dQ added atomically, "
        f"{model.GEMMS['separate']} with the separate dQ kernel (deterministic); TFLOP/s counts 2.5x the forward."
    )
    lines.append(
        "Tiles of one dQ mode tie where the Tensor Cores bind (no per-tile term yet): the kernel launches row k, "
        "the table tilewise.model.attention_backward.SHIPPED, chosen by measuring every head dim's tiles and both "
        f"dQ modes on the H200 (dQ mode: {model.DQ_MODE})."
    )
    return "\n".join(lines)


__all__ = ["advise_backward", "render", "shipped"]
