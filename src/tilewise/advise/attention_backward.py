"""`tilewise advise attention --backward`: the attention backward's tiles ranked by its time model.

The space is every dK/dV tile whose registers and shared memory fit (`tilewise.model.attention_backward.space`),
in both dQ modes; the ranking is `tilewise.model.attention_backward.predict`. Where the Tensor Cores bind, the
model has no per-tile efficiency yet and ranks tiles of one dQ mode alike: the kernel launches the rule of
`tilewise.kernels.attention_backward` (chosen by a measured probe), which the report names.
"""

from __future__ import annotations

from typing import Any

from tilewise import gpus as _gpus
from tilewise.advise import problems
from tilewise.errors import InputError
from tilewise.model import attention_backward as model


def advise_backward(problem: dict[str, Any], gpu: str = _gpus.DEFAULT_GPU, top_k: int = 5) -> list[dict[str, Any]]:
    """[{config, tag, predicted_ms, tflops, binding, terms}], fastest first, for the forward's problem keys."""
    p = problems.normalize("attention", problem)
    if p["dtype"] not in ("bf16", "fp16"):
        raise InputError(f"attention --backward models bf16 and fp16, got dtype {p['dtype']!r}")
    useful = model.useful_flops(p["batch"], p["heads"], p["seq_q"], p["seq_k"], p["head_dim"], p["causal"])
    out = []
    for c, pred in model.rank(p, gpu, top_k):
        tag = f"bm{c['block_m']}-bn{c['block_n']}-w{c['num_warps']}-s{c['num_stages']}-dq_{c['dq']}"
        out.append({"config": c, "tag": tag, "predicted_ms": pred.ms, "tflops": useful / (pred.ms * 1e-3) / 1e12,
                    "binding": pred.binding, "terms": pred.terms, "calibrated": pred.calibrated})  # fmt: skip
    return out


def render(problem: dict[str, Any], advice: list[dict[str, Any]], gpu: str) -> str:
    lines = [f"tilewise advise attention --backward on {gpu} (time model: tilewise.model.attention_backward)"]
    lines.append(f"{'#':>2} {'config':<34} {'pred us':>9} {'TFLOP/s':>8}  binding")
    for i, a in enumerate(advice, 1):
        lines.append(f"{i:>2} {a['tag']:<34} {a['predicted_ms'] * 1e3:>9.1f} {a['tflops']:>8.1f}  {a['binding']}")
    lines.append("")
    lines.append(
        f"work: {model.GEMMS['atomic']} GEMMs per (query, key) pair with dQ added atomically, "
        f"{model.GEMMS['separate']} with the separate dQ kernel (deterministic); TFLOP/s counts 2.5x the forward."
    )
    lines.append(
        "Tiles of one dQ mode tie where the Tensor Cores bind (no per-tile term yet): the kernel launches the rule "
        "in tilewise.kernels.attention_backward, chosen by a measured probe."
    )
    return "\n".join(lines)


__all__ = ["advise_backward", "render"]
