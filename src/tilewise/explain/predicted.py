"""The time model's prediction inside an explain step: the same figure `tilewise advise` and the bench rows' model_ms
give, beside the step's floor or estimate.

    prediction(step, "decode", problem, gpu, what="tilewise's decode kernel at its default config", floor_s=t)

For the advisor's families (gemm, attention, decode, grouped) without a config it is the advisor's top-1 (the
kernel's own default); for the composed ones (moe, ffn, sum: `tilewise.model.compose`) the prediction of the
config given ({} = each GEMM at its best config). The step gets `<prefix>model_ms`, `..._binding`,
`..._calibrated`, `..._config` and `..._terms`, and one sentence; where the model refuses (a dtype or head dim
it does not cover) `<prefix>model_ms` is None and the sentence says why.
"""

from __future__ import annotations

from typing import Any

from tilewise.advise import KERNELS, advise
from tilewise.errors import InputError
from tilewise.explain.report import Step, fmt_time
from tilewise.model.predict import Prediction, predict


def prediction(
    step: Step,
    kernel: str,
    problem: dict[str, Any],
    gpu: str,
    *,
    what: str,
    config: dict[str, Any] | None = None,
    floor_s: float | None = None,
    prefix: str = "",
) -> Prediction | None:
    """Add the time model's prediction of `kernel` on `problem` to `step`; returns the Prediction (or None)."""
    tag = None
    try:
        if config is None and kernel in KERNELS:
            best = advise(kernel, problem, gpu, top_k=1)[0]
            pred, tag, config = best.prediction, best.tag, best.config
        else:
            pred = predict(kernel, problem, config or {}, gpu)
    except InputError as e:
        step.values.update({prefix + "model_ms": None, prefix + "model_error": str(e)})
        step.say(f"The time model has no prediction for {what}: {e}.")
        return None
    step.values.update(
        {
            prefix + "model_ms": pred.ms,
            prefix + "model_binding": pred.binding,
            prefix + "model_calibrated": pred.calibrated,
            prefix + "model_config": tag,
            prefix + "model_terms": dict(pred.terms),
        }
    )
    where = "calibrated on this GPU" if pred.calibrated else "datasheet-only: never measured on this GPU"
    vs = f", {pred.ms / (floor_s * 1e3):.2f}x the floor" if floor_s else ""
    at = f", {tag}," if tag else ""
    step.say(
        f"The time model (`tilewise.model.predict`) predicts {fmt_time(pred.ms * 1e-3)} for {what}{at} "
        f"({pred.binding} binds; {where}){vs}."
    )
    return pred


__all__ = ["prediction"]
