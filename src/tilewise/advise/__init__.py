"""`tilewise advise`: the time model's top-k configurations for a kernel, a problem and a GPU.

    from tilewise.advise import advise, default_config
    advise("gemm", {"m": 1024, "n": 4096, "k": 4096, "layout": "nt"}, gpu="h200", top_k=5)
    default_config("decode", {"batch": 1, "heads": 32, "kv_heads": 8, "seq_len": 32768, "head_dim": 128})

Every candidate is a config of the kernel's space (`tilewise.advise.space`: the knob grid less what
does not fit the GPU), ranked by `tilewise.model.predict.predict`. Pure Python, no torch.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from tilewise import gpus as _gpus
from tilewise.advise import problems as _problems
from tilewise.advise import space
from tilewise.errors import InputError, shown
from tilewise.model.predict import Prediction, predict
from tilewise.model.traffic import attention_flops, gemm_flops

KERNELS = _problems.KERNELS


@dataclass(frozen=True)
class Advice:
    kernel: str
    config: dict[str, Any]
    tag: str
    prediction: Prediction
    tflops: float  # useful FLOPs / predicted time
    tbps: float  # compulsory bytes / predicted time
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "config": dict(self.config),
            "tag": self.tag,
            "predicted_ms": self.prediction.ms,
            "tflops": self.tflops,
            "tbps": self.tbps,
            "binding": self.prediction.binding,
            "reason": self.reason,
            "prediction": self.prediction.to_dict(),
        }


def candidates(kernel: str, p: dict[str, Any], gpu: str) -> list[dict[str, Any]]:
    """The kernel's configuration space for this problem on this GPU (every entry fits)."""
    if kernel == "gemm":
        return space.gemm_space(p["m"], p["n"], p["k"], p["dtype"], gpu, p["layout"])
    if kernel == "attention":
        return space.attention_space(p["head_dim"], p["dtype"], gpu)
    if kernel == "decode":
        return space.decode_space(p["batch"], p["kv_heads"], p["seq_len"], p["head_dim"], p["dtype"], gpu)
    return space.grouped_space(p["rows_per_expert"], p["n"], p["k"], p["dtype"], gpu)


def work(kernel: str, p: dict[str, Any]) -> tuple[float, float]:
    """(useful FLOPs, compulsory bytes) of the problem."""
    e = _gpus.element_bytes(p["dtype"])
    if kernel == "gemm":
        return gemm_flops(p["m"], p["n"], p["k"]), (p["m"] * p["k"] + p["k"] * p["n"] + p["m"] * p["n"]) * e
    if kernel == "attention":
        f = attention_flops(p["batch"], p["heads"], p["seq_q"], p["seq_k"], p["head_dim"], p["causal"])
        b = (2 * p["batch"] * p["heads"] * p["seq_q"] + 2 * p["batch"] * p["kv_heads"] * p["seq_k"]) * p["head_dim"]
        return f, b * e
    if kernel == "decode":
        f = 4 * p["batch"] * p["heads"] * p["seq_len"] * p["head_dim"]
        return f, 2 * p["batch"] * p["kv_heads"] * p["seq_len"] * p["head_dim"] * e
    rows = p["experts"] * p["rows_per_expert"]
    return 2 * rows * p["n"] * p["k"], (rows * (p["k"] + p["n"]) + p["experts"] * p["k"] * p["n"]) * e


def _reason(kernel: str, adv: Prediction, tag: str, nxt: tuple[str, Prediction] | None) -> str:
    d = adv.detail
    t = adv.terms
    if kernel in ("gemm", "grouped"):
        if kernel == "gemm":
            head = f"{d['tiles']} tiles" + (f" x split-K {d['split_k']}" if d.get("split_k", 1) > 1 else "")
            head += f": {d['waves']:.2f} waves at {d['blocks_per_sm']} block(s)/SM"
        else:
            head = f"{d['tiles']} tiles, {d['tiles_per_program']} per persistent program"
    elif kernel == "attention":
        head = f"{d['programs']} programs at {d['blocks_per_sm']} block(s)/SM"
    else:
        head = f"{d['splits']} split(s) of {d['chunk']} keys: {d['programs']} programs"
    tail = t.get("wave_tail", 0.0)
    body = f"{adv.binding} binds ({t.get(adv.binding, 0.0) / adv.ms:.0%} of {adv.ms * 1e3:.1f} us)"
    if tail > 0.05 * adv.ms:
        body += f", the last wave's tail costs {tail / adv.ms:.0%}"
    if nxt is not None:
        body += f"; next, {nxt[0]}, is predicted {nxt[1].ms / adv.ms - 1:.0%} slower ({nxt[1].binding})"
    return f"{tag}: {head}; {body}"


@functools.lru_cache(maxsize=4096)
def _advise_cached(kernel: str, frozen: str, gpu: str, top_k: int) -> tuple[Any, ...]:
    p = json.loads(frozen)
    ranked = []
    for c in candidates(kernel, p, gpu):
        ranked.append((predict(kernel, p, c, gpu), c))
    if not ranked:
        raise InputError(f"no {kernel} configuration of the space fits {gpu} for {p}")
    ranked.sort(key=lambda x: (x[0].ms, space.TAGS[kernel](x[1])))
    flops, nbytes = work(kernel, p)
    out = []
    for i, (pred, c) in enumerate(ranked[:top_k]):
        tag = space.TAGS[kernel](c)
        nxt = (space.TAGS[kernel](ranked[i + 1][1]), ranked[i + 1][0]) if i + 1 < len(ranked) else None
        s = pred.ms * 1e-3
        out.append(Advice(kernel, c, tag, pred, flops / s / 1e12, nbytes / s / 1e12, _reason(kernel, pred, tag, nxt)))
    return tuple(out)


def advise(kernel: str, problem: dict[str, Any], gpu: str = _gpus.DEFAULT_GPU, top_k: int = 5) -> list[Advice]:
    """The `top_k` configurations of `kernel`'s space for `problem` on `gpu`, fastest predicted first."""
    kernel = _problems.check_kernel(kernel)
    gpu = _problems.check_gpu(gpu)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 1000:
        raise InputError(f"top_k must be an integer in 1..1000, got {shown(top_k)}")
    p = _problems.normalize(kernel, problem)
    return [_copy(a) for a in _advise_cached(kernel, json.dumps(p, sort_keys=True), gpu, top_k)]


def _copy(a: Advice) -> Advice:
    return Advice(a.kernel, dict(a.config), a.tag, a.prediction, a.tflops, a.tbps, a.reason)


def default_config(kernel: str, problem: dict[str, Any], gpu: str = _gpus.DEFAULT_GPU) -> dict[str, Any]:
    """The advisor's top-1 configuration (a fresh dict; cached, so a kernel launch pays ~1 us)."""
    kernel = _problems.check_kernel(kernel)
    gpu = _problems.check_gpu(gpu)
    return dict(_default_cached(kernel, json.dumps(_problems.normalize(kernel, problem), sort_keys=True), gpu))


@functools.lru_cache(maxsize=8192)
def _default_cached(kernel: str, frozen: str, gpu: str) -> tuple[Any, ...]:
    best = _advise_cached(kernel, frozen, gpu, 1)[0]
    return tuple(best.config.items())


__all__ = ["KERNELS", "Advice", "advise", "candidates", "default_config"]
