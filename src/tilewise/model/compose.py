"""Predicted times for the ops the time model has no family of its own for, composed from the families it has.

    predict("moe", {"tokens": 4096, "d_model": 2048, "d_ff": 768, "experts": 128, "top_k": 8}, {}, "h200")
    predict("ffn", {"tokens": 16384, "heads": 16, "head_dim": 128, "intermediate": 512}, {}, "h200")
    predict("sum", {"numel": 2**28, "dtype": "fp32"}, {}, "h200")

`tilewise.model.predict.predict` dispatches these kernel names here. Pure Python, no torch. Each composite is
a sum of parts run one after another on the stream; every part is either a family prediction
(`predict("grouped", ...)`) or bytes over the calibrated read bandwidth plus the calibrated launch cost:

* moe (the fused MoE layer, `tilewise.kernels.moe_layer.moe`): the routing's small torch kernels (top-k,
  the gate, the int16 cast, a two-pass radix sort, searchsorted: ROUTING_LAUNCHES launches moving
  `routing_bytes`), the gate/up grouped GEMM (N = 2 d_ff: the GLU kernel loads a gate and an up tile per
  step, so its tile is 2 x block_n wide), the down grouped GEMM, and the sum over the top-k slots.
  `routing=False` drops the routing (MH-MoE's expert forward is timed with the plan already built).
* ffn (FlashFFN, `tilewise.kernels.ffn.flash_ffn`): its GEMMs, one grouped GEMM per kind with a group per
  head: forward z [T, d_h] x [Wg Wu] [d_h, 2I] and a [T, I] x Wd [I, d_h]; with `backward` the backward
  kernels' GEMMs as `tilewise.model.traffic.mhffn_backward_flops` counts them (split: 11 units, atomic: 8).
  The fused kernel keeps the [T, I] intermediate on chip, the grouped family counts it as written and read:
  its hbm term is an upper bound on the fused kernel's bytes (it binds only where the GEMMs are memory-bound).
* sum (`tilewise.kernels.reduce.sum`): one streaming pass: the bytes over the calibrated read bandwidth,
  one memory latency (the first loads and the last program's meet) and one launch.

A GEMM part takes the config the kernel ran where the caller gives it (moe: {"up": ..., "down": ...},
`GroupedConfig` fields), else the fastest predicted of `model.tiles.grouped_space` (the list the advisor ranks:
its top-1).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, shown
from tilewise.model.prediction import Prediction
from tilewise.model.tiles import grouped_space

# `tilewise.model.predict.predict`, which calls the composites here and is passed down to them for their parts
Predictor = Callable[..., Prediction]

# The routing of `kernels.moe_layer.route` + `permute`, per call: torch.topk, softmax (sigmoid: sigmoid and a
# division), the cast of the expert ids to int16, torch.sort (a radix sort of 16-bit keys: 2 passes) and
# torch.searchsorted. Launch count of the softmax gate; the sigmoid gate adds one.
ROUTING_LAUNCHES = 6


def routing_bytes(tokens: int, experts: int, top_k: int) -> int:
    """HBM bytes of the routing: the fp32 logits read once; per slot (token, k): top-k values and int64 ids
    written (12 B), the gate reads and writes the values (8 B), the int16 cast reads the ids and writes keys
    (10 B), the sort's two passes read and write a key and an int64 index (2 x 20 B), searchsorted reads the
    keys (2 B)."""
    return tokens * experts * 4 + tokens * top_k * (12 + 8 + 10 + 40 + 2)


def _num(name: str, p: dict[str, Any], default: Any = None, lo: int = 1) -> int:
    v = p.get(name, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or not lo <= int(v) <= 2**40:
        raise InputError(f"{name} must be an integer >= {lo}, got {shown(v)}")
    return int(v)


def _dtype(p: dict[str, Any], allowed: tuple[str, ...] = ("bf16", "fp16", "fp32")) -> str:
    return _gpus.dtype_key(p.get("dtype", "bf16"), allowed)  # the one dtype table


@functools.lru_cache(maxsize=1024)
def _best_grouped(frozen: str, gpu: str, predict: Predictor) -> tuple[Any, ...]:
    """The grouped space's fastest predicted config for a problem (what `tilewise.advise` ranks first)."""
    p = json.loads(frozen)
    best = None
    for c in grouped_space(p["rows_per_expert"], p["n"], p["k"], p["dtype"], gpu):
        pr = predict("grouped", p, c, gpu)
        if best is None or pr.ms < best[0].ms:
            best = (pr, c)
    if best is None:
        raise InputError(f"no grouped GEMM configuration fits {gpu} for {p}")
    return best


def _gemm_part(
    name: str, p: dict[str, Any], cfg: dict[str, Any] | None, gpu: str, predict: Predictor
) -> tuple[str, Any, dict[str, Any]]:
    if cfg is None:
        pred, cfg = _best_grouped(json.dumps(p, sort_keys=True), gpu, predict)
        return name, pred, dict(cfg)
    cfg = {"schedule": "map", **cfg}
    return name, predict("grouped", p, cfg, gpu), cfg


def _stream_part(mach: Any, nbytes: float, launches: int) -> float:
    """Seconds of `launches` small kernels moving `nbytes` at the calibrated read bandwidth."""
    return float(nbytes / mach.read_bps + launches * (mach.launch_s + mach.latency_s))


def _compose(kernel: str, mach: Any, gemms: list[Any], streams: dict[str, float], detail: dict[str, Any]) -> Prediction:
    """Parts in sequence: ms is their sum; the binding term is the largest part's ("down_gemm.tensor_core")."""
    terms = {name: pr.ms for name, pr, _ in gemms}
    terms.update({k: v * 1e3 for k, v in streams.items()})
    total = sum(terms.values())
    top = max(terms, key=lambda k: terms[k])
    sub = {name: pr for name, pr, _ in gemms}
    binding = f"{top}.{sub[top].binding}" if top in sub else top
    parts = {
        name: {"ms": pr.ms, "binding": pr.binding, "config": cfg, "terms": dict(pr.terms)} for name, pr, cfg in gemms
    }
    return Prediction(kernel, total, terms, binding, mach.key, mach.calibrated, {**detail, "parts": parts})


# ------------------------------------------------------------------------------------------ MoE layer


def moe(p: dict[str, Any], c: dict[str, Any], mach: Any, eff: Any, predict: Predictor) -> Prediction:
    T, d, f = _num("tokens", p), _num("d_model", p), _num("d_ff", p)
    E, k = _num("experts", p), _num("top_k", p)
    if k > E:
        raise InputError(f"top_k must be at most experts, got {k} > {E}")
    dt = _dtype(p, ("bf16", "fp16"))
    routing = bool(p.get("routing", True))
    e = _gpus.element_bytes(dt)
    rows = max(1, round(T * k / E))
    up_cfg = dict(c["up"]) if c.get("up") else None
    if up_cfg is not None:  # the GLU kernel's tile covers a gate and an up tile: 2 x block_n of [d, 2 d_ff]
        up_cfg["block_n"] = 2 * up_cfg["block_n"]
    gemms = [
        _gemm_part("gate_up_gemm", {"experts": E, "rows_per_expert": rows, "n": 2 * f, "k": d, "dtype": dt},
                   up_cfg, mach.key, predict),
        _gemm_part("down_gemm", {"experts": E, "rows_per_expert": rows, "n": d, "k": f, "dtype": dt},
                   dict(c["down"]) if c.get("down") else None, mach.key, predict),
    ]  # fmt: skip
    streams = {}
    if routing:
        launches = ROUTING_LAUNCHES + (1 if p.get("gate", "softmax") == "sigmoid" else 0)
        streams["routing"] = _stream_part(mach, routing_bytes(T, E, k), launches)
    if k > 1:  # y [T, k, d] summed over the slots: read T k d, write T d
        streams["topk_sum"] = _stream_part(mach, (T * k * d + T * d) * e, 1)
    detail = {"rows_per_expert": rows, "routing_bytes": routing_bytes(T, E, k) if routing else 0}
    return _compose("moe", mach, gemms, streams, detail)


# ------------------------------------------------------------------------------------------ FlashFFN


def _ffn_gemms(T: int, H: int, d: int, inter: int, backward: str | None) -> list[tuple[str, int, int, int]]:
    """(name, rows per head, N, K) of every GEMM FlashFFN runs, a group per head."""
    up = ("gate_up", T, 2 * inter, d)  # z [T, d_h] x [Wg Wu] [d_h, 2I]: 2 units
    down = ("down", T, d, inter)  # a [T, I] x Wd [I, d_h]: 1 unit
    out = [up, down]
    if backward is None:
        return out
    da = ("da", T, inter, d)  # dy [T, d_h] x Wd^T [d_h, I]: 1 unit
    dwd = ("dw_down", inter, d, T)  # a^T [I, T] x dy [T, d_h]: 1 unit
    dwgu = ("dw_gate_up", d, 2 * inter, T)  # z^T [d_h, T] x [dg du] [T, 2I]: 2 units
    dz = ("dz", T, d, 2 * inter)  # [dg du] [T, 2I] x [Wg Wu]^T [2I, d_h]: 2 units
    if backward == "split":  # dW kernel (recompute, da, three dW: 6 units) + dz kernel (recompute, da, dz: 5 units)
        return [*out, ("re_" + up[0], *up[1:]), da, dwd, dwgu, ("dz_re_" + up[0], *up[1:]), ("dz_" + da[0], *da[1:]),
                dz]  # fmt: skip
    if backward == "atomic":  # one kernel: recompute, da, three dW, dz by fp32 atomics: 8 units
        return [*out, ("re_" + up[0], *up[1:]), da, dwd, dwgu, dz]
    raise InputError(f"backward must be 'split', 'atomic' or None, got {shown(backward)}")


def ffn(p: dict[str, Any], c: dict[str, Any], mach: Any, eff: Any, predict: Predictor) -> Prediction:
    T, H, d, inter = _num("tokens", p), _num("heads", p), _num("head_dim", p), _num("intermediate", p)
    dt = _dtype(p, ("bf16", "fp16"))
    backward = p.get("backward")
    gemms = []
    for name, rows, n, k in _ffn_gemms(T, H, d, inter, backward):
        gemms.append(
            _gemm_part(name + "_gemm", {"experts": H, "rows_per_expert": rows, "n": n, "k": k, "dtype": dt}, None,
                       mach.key, predict)
        )  # fmt: skip
    e = _gpus.element_bytes(dt)
    detail = {"intermediate_bytes_counted": 2 * T * H * inter * e * (3 if backward else 1), "backward": backward}
    return _compose("ffn", mach, gemms, {}, detail)


# ------------------------------------------------------------------------------------------ sum


def sum_(p: dict[str, Any], c: dict[str, Any], mach: Any, eff: Any, predict: Predictor) -> Prediction:
    numel = _num("numel", p)
    outputs = _num("outputs", p, 1)
    dt = _dtype(p)
    e = _gpus.element_bytes(dt)
    nbytes = (numel + outputs) * e
    t_hbm = nbytes / mach.read_bps
    terms = {"hbm": t_hbm * 1e3, "latency": mach.latency_s * 1e3, "launch": mach.launch_s * 1e3}
    binding = max(terms, key=lambda k: terms[k])
    detail = {"hbm_bytes": nbytes, "read_tbps": mach.read_bps / 1e12}
    return Prediction("sum", sum(terms.values()), terms, binding, mach.key, mach.calibrated, detail)


FAMILIES = {"moe": moe, "ffn": ffn, "sum": sum_}

__all__ = ["FAMILIES", "ROUTING_LAUNCHES", "ffn", "moe", "routing_bytes", "sum_"]
