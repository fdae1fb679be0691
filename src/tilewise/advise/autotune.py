"""The time model as `triton.autotune`'s pruner, for a kernel described with `tilewise.advise.kernel`.

    import triton
    from tilewise.advise.autotune import prune_configs_by
    from tilewise.advise.kernel import describe

    @triton.autotune(configs=CONFIGS, key=["M", "N", "K"],
                     prune_configs_by=prune_configs_by(describe("gemm", name="my_matmul"), top_k=3))
    @triton.jit
    def my_matmul(a_ptr, b_ptr, c_ptr, M, N, K, ..., BLOCK_SIZE_M: tl.constexpr, ...): ...

For every new key the autotuner calls `early_config_prune(configs, named_args, **kwargs)` (the
configs that cannot fit the GPU's shared memory or registers leave; the rules are the advisor's own,
`tilewise.advise.space`), then `perf_model(**named_args, **kwargs, **config.all_kwargs())` on each
remaining config and times only the `top_k` fastest predicted. Both signatures are triton's
`Autotuner.prune_configs` in 3.6 and 3.9 (python/triton/runtime/autotuner.py): the config's
meta-parameters arrive merged with the kernel's arguments, num_warps / num_stages / num_ctas /
maxnreg among them.

The rates come from a calibration file of this kernel (`tilewise calibrate`; `calibration=PATH`),
else from the family's built-in calibration (the GPU's calibration file: the rates measured on the
config of tilewise's own kernel with the same tile, or the family's median).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from tilewise import gpus as _gpus
from tilewise.advise import space
from tilewise.advise.kernel import KernelDescription, config_tag, predict_ms
from tilewise.errors import InputError

CAL_FORMAT = "tilewise-kernel-calibration/1"
# which rates a calibration file hands the pruner: its fit, or the family's built-in ones (`calibrate.fit`)
KEPT = ("fitted", "built-in")


# ---------------------------------------------------------------------------------------------- fit rules


def fits(desc: KernelDescription, named: Mapping[str, Any], kwargs: Mapping[str, Any]) -> str:
    """'' when one config fits the GPU for this call, else why not (shared memory, registers, threads)."""
    knobs = desc.config(kwargs)
    g = _gpus.get(desc.gpu)
    warps = int(knobs.get("num_warps", 4))
    if not 1 <= warps * 32 <= g.max_threads_per_block:
        return f"{warps} warps > {g.max_threads_per_block // 32} per block"
    if desc.family == "stream":
        return ""
    dtype = desc.dtype(named)
    e = _gpus.element_bytes(dtype)
    limit = g.smem_per_block_optin - g.reserved_smem_per_block
    if desc.family == "gemm":
        p = desc.problem(named)
        return space.gemm_fits(knobs, p["m"], p["n"], p["k"], dtype, g, p["layout"])
    if desc.family == "grouped":
        smem = knobs["num_stages"] * (knobs["block_m"] * knobs["block_k"] + knobs["block_k"] * knobs["block_n"]) * e
        if smem > limit:
            return f"shared memory {smem} B > {limit} B"
        acc = knobs["block_m"] * knobs["block_n"] / (32 * warps)
        if acc > space.MAX_ACC_REGS:
            return f"accumulator {acc:.0f} registers/thread > {space.MAX_ACC_REGS}"
        return ""
    p = desc.problem(named)
    return space.attention_fits(knobs, int(p["head_dim"]), dtype, g)


# ---------------------------------------------------------------------------------------------- calibration


def load_calibration(path: str, desc: KernelDescription) -> dict[str, Any]:
    """A calibration file written by `tilewise calibrate` for this kernel, checked."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"calibration must be a path to a file written by tilewise calibrate, got {path!r}")
    if not os.path.isfile(path):
        raise InputError(f"calibration file {path} must exist (tilewise calibrate writes it), got no such file")
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"calibration file {path} must be JSON written by tilewise calibrate, got {e}") from None
    if not isinstance(data, dict) or data.get("format") != CAL_FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise InputError(f"calibration file {path} must have format {CAL_FORMAT!r}, got {got!r}")
    for key, want in (("kernel", desc.name), ("family", desc.family), ("gpu", desc.gpu),
                      ("fingerprint", desc.fingerprint())):  # fmt: skip
        if data.get(key) != want:
            raise InputError(f"calibration file {path} is for {key} {data.get(key)!r}, expected {want!r}")
    rates = data.get("rates")
    if not isinstance(rates, dict) or not all(isinstance(rates.get(k), (int, float)) for k in ("mma", "stream")):
        raise InputError(f"calibration file {path} must hold rates {{mma, stream, fixed}}, got {rates!r}")
    if data.get("kept", "fitted") not in KEPT:
        raise InputError(f"calibration file {path}: kept must be one of {', '.join(KEPT)}, got {data.get('kept')!r}")
    if not isinstance(data.get("configs", {}), dict):
        raise InputError(f"calibration file {path}: configs must be an object, got {type(data['configs']).__name__}")
    return data


def rates_for(cal: Mapping[str, Any] | None, tag: str) -> dict[str, float] | None:
    """The rates of one config: its own where the calibration timed it, else the kernel's; None (the family's
    built-in rates) without a calibration or where its fit did not beat them on its held-out shapes."""
    if not cal or cal.get("kept", "fitted") == "built-in":
        return None
    own = cal.get("configs", {}).get(tag)
    return {k: float(v) for k, v in (own or cal["rates"]).items()}


# ---------------------------------------------------------------------------------------------- the pruner


def _kwargs(config: Any) -> dict[str, Any]:
    if hasattr(config, "all_kwargs"):
        return dict(config.all_kwargs())
    if isinstance(config, Mapping):
        return dict(config)
    raise InputError(f"configs must be triton.Config objects, got {type(config).__name__}")


def prune_configs_by(
    desc: KernelDescription,
    top_k: int = 3,
    *,
    calibration: str | None = None,
    unmapped: str = "refuse",
) -> dict[str, Any]:
    """`triton.autotune`'s `prune_configs_by` dict: {"perf_model", "top_k", "early_config_prune"}.

    top_k: how many of the fastest predicted configs the autotuner times (1 times none).
    calibration: a file of this kernel from `tilewise calibrate` (None: the family's built-in rates).
    unmapped: "refuse" raises InputError on a config with a meta-parameter the description does not
        map; "keep" times such configs unpruned (the model cannot rank them) and warns once.
    """
    if not isinstance(desc, KernelDescription):
        raise InputError(f"desc must be a KernelDescription (tilewise.advise.kernel.describe), got {desc!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InputError(f"top_k must be an integer >= 1, got {top_k!r}")
    if unmapped not in ("refuse", "keep"):
        raise InputError(f"unmapped must be 'refuse' or 'keep', got {unmapped!r}")
    cal = load_calibration(calibration, desc) if calibration is not None else None
    kept: set[frozenset[tuple[str, Any]]] = set()
    # the names a config's keywords may have: the description's, and triton.Config's own fields
    config_names = set(desc.meta) | set(desc.ignore) | {"num_warps", "num_stages", "num_ctas", "maxnreg"}

    def early_config_prune(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
        named = {**named_args, **kwargs}
        out: list[Any] = []
        dropped: list[Any] = []
        for c in configs:
            kw = _kwargs(c)
            _, miss = desc.split(kw)
            if miss:
                if unmapped == "refuse":
                    desc.config(kw)  # raises, naming the meta-parameters
                kept.add(_signature({k: v for k, v in kw.items() if k in config_names}))
                out.append(c)
                continue
            why = fits(desc, named, kw)
            (dropped if why else out).append(c)
        if kept and unmapped == "keep":
            warnings.warn(
                f"{desc.name}: {len(kept)} config(s) with meta-parameters the description does not map are timed "
                "unpruned",
                stacklevel=2,
            )
        if not out:
            why = fits(desc, named, _kwargs(configs[0])) if configs else "no configs"
            raise InputError(f"{desc.name}: no config fits {desc.gpu} for this call (first: {why})")
        return out

    def perf_model(**merged: Any) -> float:
        # the config's keywords are the names the description maps, num_warps & co; the rest are arguments
        cfg = {k: v for k, v in merged.items() if k in config_names}
        if kept and _signature(cfg) in kept:
            return float("-inf")  # unmapped: always timed
        named = {k: v for k, v in merged.items() if k not in cfg}
        return predict_ms(desc, named, cfg, rates_for(cal, config_tag(desc, cfg)))

    return {"perf_model": perf_model, "top_k": top_k, "early_config_prune": early_config_prune}


def _signature(cfg: Mapping[str, Any]) -> frozenset[tuple[str, str]]:
    return frozenset((k, repr(v)) for k, v in cfg.items())


def rank(
    desc: KernelDescription,
    configs: list[Any],
    named: Mapping[str, Any],
    *,
    calibration: str | Mapping[str, Any] | None = None,
) -> list[tuple[float, Any]]:
    """(predicted ms, config) of every config that fits, fastest first: the pruner's order, outside triton."""
    cal = load_calibration(calibration, desc) if isinstance(calibration, str) else calibration
    out = []
    for c in configs:
        kw = _kwargs(c)
        if fits(desc, named, kw):
            continue
        out.append((predict_ms(desc, named, kw, rates_for(cal, config_tag(desc, kw))), c))
    out.sort(key=lambda x: x[0])
    return out


PerfModel = Callable[..., float]
__all__ = ["CAL_FORMAT", "fits", "load_calibration", "prune_configs_by", "rank", "rates_for"]
