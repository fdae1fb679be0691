"""The time model as Torch Inductor's max-autotune choice filter for its Triton GEMM template.

    import torch._inductor.config as ic
    from tilewise.advise.inductor import choices
    ic.inductor_choices_class = lambda: choices(top_k=3)      # or V.set_choices_handler(choices(3))

Inductor asks `InductorChoices._finalize_template_configs` for the template choices of every mm before
it generates and benchmarks them (torch/_inductor/choices.py, torch 2.11 and 2.13: "This method can be
subclassed to perform any override/modification of the choices ... before they are converted to
ChoiceCaller objects"); `config.inductor_choices_class` (or `V.set_choices_handler`) installs a
subclass. This one keeps every choice of other templates (ATen's mm, the persistent TMA template)
and, of the Triton `mm` template's, the `top_k` the model predicts fastest for the problem's M, N, K,
dtype and B layout. Its meta-parameters are Inductor's (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
num_stages, num_warps); EVEN_K, ALLOW_TF32, USE_FAST_ACCUM and ACC_TYPE leave the time unchanged.
Needs torch (imported when `choices` is called).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tilewise import gpus as _gpus
from tilewise.advise.autotune import fits, load_calibration, rates_for
from tilewise.advise.kernel import KernelDescription, config_tag, describe, predict_ms
from tilewise.errors import InputError

TEMPLATE_UID = "triton::mm"
NEUTRAL_META = ("EVEN_K", "ALLOW_TF32", "USE_FAST_ACCUM", "ACC_TYPE", "num_ctas", "maxnreg", "num_consumer_groups",
                "num_buffers_warp_spec", "waves_per_eu", "matrix_instr_nonkdim", "kpack")  # fmt: skip
DTYPES = {"torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32"}


def description(gpu: str = _gpus.DEFAULT_GPU) -> KernelDescription:
    """Inductor's Triton mm template in the model's terms."""
    return describe("gemm", name="inductor.triton_mm", gpu=gpu, ignore=NEUTRAL_META)


def problem_of(kernel_inputs: Any) -> dict[str, Any]:
    """M, N, K, dtype and layout of an Inductor MMKernelInputs (hinted sizes; B's strides give the layout)."""
    m, n, k = (int(x) for x in kernel_inputs.mnk_hinted())
    dt = DTYPES.get(str(kernel_inputs.dtype(0)))
    if dt is None:
        raise InputError(f"inductor mm dtype must be fp16, bf16 or fp32, got {kernel_inputs.dtype(0)}")
    layout = "nn"
    try:
        stride = [int(s) for s in kernel_inputs.nodes()[1].get_stride()]
        if len(stride) >= 2 and stride[-1] != 1 and stride[-2] == 1:
            layout = "nt"
    except (AttributeError, IndexError, TypeError):
        pass
    return {"M": m, "N": n, "K": k, "dtype": dt, "layout": layout}


def prune(ktcs: Iterable[Any], kernel_inputs: Any, top_k: int, desc: KernelDescription,
          cal: dict[str, Any] | None = None) -> list[Any]:  # fmt: skip
    """The choices with the Triton mm template's cut to the model's `top_k` (others kept, order kept)."""
    ktcs = list(ktcs)
    named = problem_of(kernel_inputs)
    scored, drop = [], set()
    for i, c in enumerate(ktcs):
        if getattr(getattr(c, "template", None), "uid", None) != TEMPLATE_UID:
            continue
        kw = {k: v for k, v in c.params.to_kwargs().items() if k in desc.meta or k in NEUTRAL_META}
        try:
            if fits(desc, named, kw):
                drop.add(i)  # cannot fit shared memory or registers
                continue
            ms = predict_ms(desc, named, kw, rates_for(cal, config_tag(desc, kw)))
        except InputError:
            continue  # a config the model cannot read stays in the list, unranked
        scored.append((ms, i))
    drop |= {i for _ms, i in sorted(scored)[top_k:]}
    return [c for i, c in enumerate(ktcs) if i not in drop]


def choices(top_k: int = 3, gpu: str = _gpus.DEFAULT_GPU, calibration: str | None = None) -> Any:
    """An InductorChoices instance whose Triton mm template choices are the model's `top_k`."""
    from torch._inductor.choices import InductorChoices

    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InputError(f"top_k must be an integer >= 1, got {top_k!r}")
    desc = description(gpu)
    cal = load_calibration(calibration, desc) if calibration else None

    class TilewiseChoices(InductorChoices):  # type: ignore[misc]
        def uuid(self) -> str:
            return f"tilewise:{desc.gpu}:top{top_k}:{desc.fingerprint()}"

        def _finalize_template_configs(self, template_choices: Any, kernel_inputs: Any, templates: Any, op_name: Any,
                                       kwarg_overrides: Any = None) -> Any:  # fmt: skip
            out = super()._finalize_template_configs(
                template_choices, kernel_inputs, templates, op_name, kwarg_overrides
            )
            return prune(out, kernel_inputs, top_k, desc, cal)

    return TilewiseChoices()


__all__ = ["choices", "description", "problem_of", "prune"]
