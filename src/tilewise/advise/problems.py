"""Check and normalise the problems the advisor answers for (one InputError line for bad input)."""

from __future__ import annotations

from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError, shown, whole
from tilewise.validate import MAX_SIZE

KERNELS = ("gemm", "attention", "decode", "grouped")
# Absurd-size guards: the model is O(1) in the sizes, but a GEMM dimension longer than the largest GPU's
# memory in bytes (validate.MAX_SIZE, the ceiling every explain report uses too) or an attention sequence
# past 2^22 is no problem a GPU of today holds; refuse it plainly instead of answering.
MAX_DIM = MAX_SIZE
MAX_SEQ = 2**22
MAX_BATCH_HEADS = 2**20
MAX_EXPERTS = 4096
HEAD_DIMS = (16, 32, 64, 128, 256)

FIELDS: dict[str, dict[str, object]] = {
    "gemm": {"m": None, "n": None, "k": None, "dtype": "bf16", "layout": "nn"},
    "attention": {
        "batch": None,
        "heads": None,
        "kv_heads": None,
        "seq_q": None,
        "seq_k": None,
        "head_dim": None,
        "causal": False,
        "dtype": "bf16",
    },
    "decode": {"batch": None, "heads": None, "kv_heads": None, "seq_len": None, "head_dim": None, "dtype": "bf16"},
    "grouped": {"experts": None, "rows_per_expert": None, "n": None, "k": None, "dtype": "bf16"},
}


def _int(name: str, v: object, hi: int) -> int:
    # The one whole-number validator (errors.whole); digit strings count, as request bodies carry them.
    return whole(name, v, minimum=1, maximum=hi, strings=True)


def dtype_key(v: object, allowed: tuple[str, ...] = ("bf16", "fp16", "fp32")) -> str:
    return _gpus.dtype_key(v, allowed)  # the one dtype table


def check_kernel(kernel: object) -> str:
    if kernel not in KERNELS:
        raise InputError(f"kernel must be one of {', '.join(KERNELS)}, got {shown(kernel)}")
    return kernel  # type: ignore[return-value]


def check_gpu(gpu: object) -> str:
    if not isinstance(gpu, (str, _gpus.GPU)):
        raise InputError(f"gpu must be a registry name ({', '.join(_gpus.names())}), got {shown(gpu)}")
    return _gpus.get(gpu).key


def normalize(kernel: str, problem: dict[str, Any]) -> dict[str, Any]:
    """The problem with defaults filled in and every field checked; raises InputError."""
    kernel = check_kernel(kernel)
    if not isinstance(problem, dict):
        raise InputError(f"problem must be a dict of {', '.join(FIELDS[kernel])}, got {type(problem).__name__}")
    unknown = set(problem) - set(FIELDS[kernel])
    if unknown:
        raise InputError(f"{kernel} problem fields are {', '.join(FIELDS[kernel])}, got unknown {sorted(unknown)}")
    p = {}
    for k, default in FIELDS[kernel].items():
        if k not in problem or problem[k] is None:
            if default is None:
                if kernel == "attention" and k == "seq_k" and problem.get("seq_q") is not None:
                    p[k] = problem["seq_q"]
                    continue
                if k == "kv_heads" and problem.get("heads") is not None:
                    p[k] = problem["heads"]
                    continue
                raise InputError(f"{kernel} problem needs {k}, got none")
            p[k] = default
        else:
            p[k] = problem[k]
    if kernel == "gemm":
        for k in ("m", "n", "k"):
            p[k] = _int(k, p[k], MAX_DIM)
        p["dtype"] = dtype_key(p["dtype"])
        if p["layout"] not in ("nn", "nt"):
            raise InputError(f"layout must be 'nn' (B is [K, N]) or 'nt' (a @ w.T, w [N, K]), got {shown(p['layout'])}")
    elif kernel == "attention":
        for k in ("batch", "heads", "kv_heads"):
            p[k] = _int(k, p[k], MAX_BATCH_HEADS)
        for k in ("seq_q", "seq_k"):
            p[k] = _int(k, p[k], MAX_SEQ)
        p["head_dim"] = _int("head_dim", p["head_dim"], 256)
        if p["head_dim"] not in HEAD_DIMS:
            raise InputError(f"head_dim must be one of {HEAD_DIMS}, got {p['head_dim']}")
        if p["heads"] % p["kv_heads"]:
            raise InputError(f"heads must be a multiple of kv_heads (GQA), got {p['heads']} and {p['kv_heads']}")
        if p["batch"] * p["heads"] > MAX_BATCH_HEADS:
            raise InputError(f"batch x heads must be <= {MAX_BATCH_HEADS}, got {p['batch'] * p['heads']}")
        if not isinstance(p["causal"], bool):
            raise InputError(f"causal must be true or false, got {shown(p['causal'])}")
        p["dtype"] = dtype_key(p["dtype"], ("bf16", "fp16"))
    elif kernel == "decode":
        for k in ("batch", "heads", "kv_heads"):
            p[k] = _int(k, p[k], MAX_BATCH_HEADS)
        p["seq_len"] = _int("seq_len", p["seq_len"], MAX_SEQ * 4)
        p["head_dim"] = _int("head_dim", p["head_dim"], 256)
        if p["head_dim"] not in HEAD_DIMS:
            raise InputError(f"head_dim must be one of {HEAD_DIMS}, got {p['head_dim']}")
        if p["heads"] % p["kv_heads"]:
            raise InputError(f"heads must be a multiple of kv_heads (GQA), got {p['heads']} and {p['kv_heads']}")
        p["dtype"] = dtype_key(p["dtype"], ("bf16", "fp16"))
    else:
        p["experts"] = _int("experts", p["experts"], MAX_EXPERTS)
        p["rows_per_expert"] = _int("rows_per_expert", p["rows_per_expert"], 2**24)
        for k in ("n", "k"):
            p[k] = _int(k, p[k], 2**20)
        p["dtype"] = dtype_key(p["dtype"], ("bf16", "fp16"))
    return p
