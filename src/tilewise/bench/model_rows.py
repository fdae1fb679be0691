"""The time model's prediction for a committed benchmark row, computed when it is read.

The rows under benchmarks/results/h200/ were measured before `tilewise.model.predict` existed, so they carry
the roofline floor (`predicted_ms`) only. Their measured numbers stay as measured; a reader that shows the
prediction beside them asks this module, which reads the problem and the config that ran back out of the row
(its shape and config strings, as each suite wrote them) and predicts with today's model:

    spec = model_spec(row)                 # (kernel, problem, config) or None for a row it cannot read
    row = with_model(row)                  # a copy with model_ms, model_binding, model_source

New rows carry model_ms from the harness itself (`tilewise.bench.harness.make_row`); `with_model` keeps theirs.
"""

from __future__ import annotations

import re
from typing import Any

from tilewise.advise.space import gemm_config_from_tag, grouped_config_from_tag
from tilewise.bench import harness
from tilewise.errors import InputError

SOURCE = "computed on reading with today's tilewise.model.predict (the row predates the model)"

_ATTN_SHAPE = re.compile(r"^B(\d+) H(\d+)(?:/(\d+))? S(\d+) D(\d+) (causal|non-causal)$")
_ATTN_CFG = re.compile(r"BLOCK_M=(\d+) BLOCK_N=(\d+) warps=(\d+) stages=(\d+)")
_DECODE_SHAPE = re.compile(r"^B(\d+) Hq(\d+) Hkv(\d+) (?:L(\d+)k|varlen (\d+)k-(\d+)k)$")
_DECODE_TILE = re.compile(r"BLOCK_N=(\d+) warps=(\d+) stages=(\d+)")
_GROUPED_SHAPE = re.compile(r"^E(\d+) rows\S* K(\d+) N(\d+) \(T (\d+)\)")
_MOE_SHAPE = re.compile(r"T(\d+) d(\d+) d_ff(\d+) E(\d+) top(\d+) (softmax|sigmoid)")


def _ints(m: re.Match[str]) -> list[int]:
    return [int(x) for x in m.groups() if x is not None and x.isdigit()]


def _gemm(r: dict[str, Any]) -> Any:
    m, n, k = (int(x) for x in r["shape"].split("x"))
    cfg = gemm_config_from_tag(r.get("config", ""))
    return None if cfg is None else ("gemm", {"m": m, "n": n, "k": k, "dtype": r["dtype"], "layout": "nn"}, cfg)


def _attention(r: dict[str, Any]) -> Any:
    s, c = _ATTN_SHAPE.match(r["shape"]), _ATTN_CFG.search(r.get("config") or "")
    if s is None or c is None:
        return None
    b, h, hk, sq, d, causal = s.groups()
    p = {"batch": int(b), "heads": int(h), "kv_heads": int(hk or h), "seq_q": int(sq), "seq_k": int(sq),
         "head_dim": int(d), "causal": causal == "causal", "dtype": r["dtype"]}  # fmt: skip
    return "attention", p, dict(zip(("block_m", "block_n", "num_warps", "num_stages"), _ints(c)))


def _decode(r: dict[str, Any]) -> Any:
    s, t = _DECODE_SHAPE.match(r["shape"]), _DECODE_TILE.search(r.get("tile") or "")
    if s is None or t is None or not r.get("splits"):
        return None
    b, hq, hk, L, _lo, hi = s.groups()
    seq = int(L or hi) * 1024  # the longest sequence sets the plan (varlen: the range's top)
    p = {"batch": int(b), "heads": int(hq), "kv_heads": int(hk), "seq_len": seq, "head_dim": 128, "dtype": r["dtype"]}
    if L is None and r.get("total_keys"):  # varlen: the keys of all sequences (the model prices ragged lengths)
        p["total_keys"] = int(r["total_keys"])
    cfg = dict(zip(("block_n", "num_warps", "num_stages"), _ints(t)), num_splits=int(r["splits"]))
    return "decode", p, cfg


def _grouped(r: dict[str, Any]) -> Any:
    s, cfg = _GROUPED_SHAPE.match(r["shape"]), grouped_config_from_tag(r.get("config", ""))
    if s is None or cfg is None:
        return None
    E, K, N, T = (int(x) for x in s.groups())
    return "grouped", {"experts": E, "rows_per_expert": max(1, round(T / E)), "n": N, "k": K, "dtype": r["dtype"]}, cfg


def _moe(r: dict[str, Any]) -> Any:
    s = _MOE_SHAPE.search(r["shape"])
    up, down = grouped_config_from_tag(r.get("up_config", "")), grouped_config_from_tag(r.get("down_config", ""))
    if s is None or up is None or down is None:
        return None
    T, d, f, E, k = (int(x) for x in s.groups()[:5])
    p = {"tokens": T, "d_model": d, "d_ff": f, "experts": E, "top_k": k, "gate": s.group(6), "dtype": r["dtype"]}
    return "moe", p, {"up": up, "down": down}


def _ffn(r: dict[str, Any], backward: Any = None) -> Any:
    if not all(k in r for k in ("tokens", "heads", "head_dim", "intermediate")):
        return None
    p = {"tokens": r["tokens"], "heads": r["heads"], "head_dim": r["head_dim"], "intermediate": r["intermediate"],
         "dtype": r["dtype"]}  # fmt: skip
    return "ffn", (p if backward is None else {**p, "backward": backward}), {}


def _mhmoe(r: dict[str, Any]) -> Any:
    need = ("tokens", "heads", "head_dim", "experts_per_head", "expert_width", "top_k")
    if not all(k in r for k in need):
        return None
    p = {"tokens": r["tokens"] * r["heads"], "d_model": r["head_dim"], "d_ff": r["expert_width"],
         "experts": r["heads"] * r["experts_per_head"], "top_k": r["top_k"], "dtype": r["dtype"], "routing": False}  # fmt: skip
    return "moe", p, {}


def _sum(r: dict[str, Any]) -> Any:
    dims = r["shape"].split(" ")
    shape = [int(x) for x in dims[0].split("x")]
    numel = shape[0] * (shape[1] if len(shape) == 2 else 1)
    outputs = 1 if len(shape) == 1 else (shape[0] if r["shape"].endswith("dim=1") else shape[1])
    return "sum", {"numel": numel, "dtype": r["dtype"], "outputs": outputs}, {}


_READERS = {
    "matmul": _gemm,
    "attention": _attention,
    "decode_attention": _decode,
    "grouped_matmul": _grouped,
    "moe": _moe,
    "flash_ffn_fwd": _ffn,
    # the backward mode the suite ran is in the row since the FFN work; rows before it ran the default ("split")
    "flash_ffn_fwdbwd": lambda r: _ffn(r, r.get("backward_mode") or "split"),
    "mhmoe_fwd": _mhmoe,
    "sum": _sum,
}


def model_spec(row: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """(kernel, problem, config) of `tilewise.model.predict` for a benchmark row, or None where it cannot be read."""
    read = _READERS.get(str(row.get("kernel")))
    try:
        return None if read is None else read(row)
    except (KeyError, ValueError, TypeError):
        return None


def with_model(row: dict[str, Any], gpu_key: str | None = None) -> dict[str, Any]:
    """A copy of `row` with model_ms / model_binding (and model_source saying where they come from)."""
    if row.get("model_ms") is not None:
        return {**row, "model_source": "measured with the row (tilewise.bench.harness)"}
    spec = model_spec(row)
    if spec is None:
        return {**row, "model_ms": None, "model_binding": None, "model_source": "no model for this row"}
    key = gpu_key or row.get("model_gpu") or harness.registry_key_for(row.get("gpu", ""))
    try:
        cols = harness.model_columns(*spec, key)
    except InputError as e:  # pragma: no cover - model_columns already turns refusals into model_error
        cols = {"model_ms": None, "model_binding": None, "model_error": str(e)}
    return {**row, **cols, "model_source": SOURCE}


__all__ = ["SOURCE", "model_spec", "with_model"]
