"""A user's own Triton kernel, described in the time model's terms.

    from tilewise.advise.kernel import describe
    mm = describe("gemm", name="my_matmul")              # Triton tutorial 03's names are the defaults
    mm.problem({"a_ptr": a, "b_ptr": b, "M": 4096, "N": 4096, "K": 4096})
    -> {"m": 4096, "n": 4096, "k": 4096, "dtype": "fp16", "layout": "nn"}
    mm.config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
               "num_warps": 8, "num_stages": 3})
    -> {"block_m": 128, "block_n": 256, "block_k": 64, "group_m": 8, "num_warps": 8, "num_stages": 3, ...}

A description is declarative: which family of the model the kernel belongs to, which of its
arguments are the problem's sizes, which tensor gives the dtype (and, for a GEMM, whose strides give
the layout), and which meta-parameters are the model's knobs. Families:

* "gemm": an output-stationary K loop over BLOCK_M x BLOCK_N tiles (tutorial 03, FlagGems' mm,
  Inductor's mm template): `tilewise.model.predict`'s GEMM terms (waves, padding, Little's law,
  pipeline fill, L2 re-reads of the grouped order).
* "grouped": a persistent grouped GEMM over equal expert row counts (predict's grouped terms).
* "attention": a flash-attention forward (tutorial 06's names): predict's attention terms.
* "stream": a memory-bound kernel (norms, softmax, element-wise, reductions) told by three
  functions of its arguments and meta-parameters: bytes each program moves, FLOPs each program
  issues and the number of programs; `stream_prediction` times it.

Anything a description cannot map is refused with one line (`InputError`) naming it: an unknown
family, an argument the kernel was not called with, a meta-parameter no knob takes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tilewise import gpus as _gpus
from tilewise.errors import InputError
from tilewise.model import predict as _predict
from tilewise.model.occupancy import occupancy as _occupancy
from tilewise.util import cdiv

FAMILIES = ("gemm", "grouped", "attention", "stream")

# The model's knobs per family and the meta-parameter names that map to them by default: Triton's
# tutorials (BLOCK_SIZE_M, GROUP_SIZE_M), FlagGems and Inductor's mm template (BLOCK_M, GROUP_M).
# num_warps / num_stages are triton.Config's own fields.
DEFAULT_META: dict[str, dict[str, str]] = {
    "gemm": {
        "BLOCK_SIZE_M": "block_m", "BLOCK_M": "block_m", "BLOCK_SIZE_N": "block_n", "BLOCK_N": "block_n",
        "BLOCK_SIZE_K": "block_k", "BLOCK_K": "block_k", "GROUP_SIZE_M": "group_m", "GROUP_M": "group_m",
        "SPLIT_K": "split_k", "num_warps": "num_warps", "num_stages": "num_stages",
    },
    "grouped": {
        "BLOCK_SIZE_M": "block_m", "BLOCK_M": "block_m", "BLOCK_SIZE_N": "block_n", "BLOCK_N": "block_n",
        "BLOCK_SIZE_K": "block_k", "BLOCK_K": "block_k", "num_warps": "num_warps", "num_stages": "num_stages",
    },
    "attention": {
        "BLOCK_M": "block_m", "BLOCK_N": "block_n", "num_warps": "num_warps", "num_stages": "num_stages",
    },
    "stream": {"num_warps": "num_warps", "num_stages": "num_stages"},
}  # fmt: skip
# triton.Config fields that do not change the model's time at their defaults (num_ctas 1, no maxnreg)
NEUTRAL = {"num_ctas": 1, "maxnreg": None}
# knobs every config of a family needs, with the value a kernel without that meta-parameter has
KNOB_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemm": {"group_m": 1, "split_k": 1, "num_warps": 4, "num_stages": 3},
    "grouped": {"num_warps": 4, "num_stages": 3},
    "attention": {"num_warps": 4, "num_stages": 3},
    "stream": {"num_warps": 4, "num_stages": 1},
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "gemm": ("block_m", "block_n", "block_k"),
    "grouped": ("block_m", "block_n", "block_k"),
    "attention": ("block_m", "block_n"),
    "stream": (),
}
# problem fields -> the kernel arguments that carry them, by default (tutorial 03 / 06 names)
DEFAULT_ARGS: dict[str, dict[str, Any]] = {
    "gemm": {"m": "M", "n": "N", "k": "K"},
    "grouped": {"experts": "E", "rows_per_expert": "R", "n": "N", "k": "K"},
    "attention": {"batch": "Z", "heads": "H", "kv_heads": "H", "seq_q": "N_CTX", "seq_k": "N_CTX",
                  "head_dim": "HEAD_DIM", "causal": False},
    "stream": {},
}  # fmt: skip
# the tensors whose dtype is the problem's (the first one the kernel was called with), per family
DEFAULT_DTYPE_FROM = {
    "gemm": ("a_ptr", "A", "a", "x_ptr"),
    "grouped": ("a_ptr", "A", "x_ptr", "X"),
    "attention": ("Q", "q", "q_ptr"),
    "stream": ("X", "x", "x_ptr", "X_ptr", "input_ptr"),
}
# the GEMM's B operand: [K, N] with unit stride along N is "nn", unit stride along K ("w.T") is "nt"
DEFAULT_LAYOUT_FROM = ("b_ptr", "B", "b", "w_ptr")
DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "fp16": "fp16", "bf16": "bf16", "fp32": "fp32"}

ArgFn = Callable[[Mapping[str, Any], Mapping[str, Any]], float]


@dataclass(frozen=True)
class KernelDescription:
    """What a Triton kernel is in the model's terms (see the module doc). Build it with `describe`."""

    family: str
    name: str
    args: Mapping[str, Any]  # problem field -> kernel argument name, a literal, or fn(named_args) -> value
    meta: Mapping[str, str]  # meta-parameter (or num_warps / num_stages) -> model knob
    fixed: Mapping[str, Any]  # knobs the kernel fixes (no meta-parameter for them)
    ignore: tuple[str, ...]  # meta-parameters that do not change the time (EVEN_K, ACC_TYPE ...)
    dtype_from: tuple[str, ...]
    layout_from: tuple[str, ...]
    gpu: str
    # "stream": bytes moved and FLOPs issued per program, and the programs, from (named args, knobs + meta)
    bytes_per_program: ArgFn | None = None
    flops_per_program: ArgFn | None = None
    programs: ArgFn | None = None
    elements_per_program: ArgFn | None = None  # lanes of work a program issues (masked ones too)
    extra: Mapping[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ the problem
    def problem(self, named: Mapping[str, Any]) -> dict[str, Any]:
        """The model's problem dict from the kernel's named arguments (triton's `nargs`)."""
        out: dict[str, Any] = {}
        for fieldname, src in self.args.items():
            out[fieldname] = self._value(fieldname, src, named)
        out["dtype"] = self.dtype(named)
        if self.family == "gemm":
            out["layout"] = self.layout(named, out)
        return out

    def _value(self, fieldname: str, src: Any, named: Mapping[str, Any]) -> Any:
        if callable(src):
            return src(named)
        if isinstance(src, str):
            if src not in named:
                raise InputError(
                    f"{self.name}: problem field {fieldname!r} maps to argument {src!r}, which the kernel was not "
                    f"called with (arguments: {', '.join(sorted(named))})"
                )
            v = named[src]
            if hasattr(v, "item") and not hasattr(v, "data_ptr"):
                v = v.item()
            return v
        return src

    def _tensor(self, names: tuple[str, ...], what: str, named: Mapping[str, Any]) -> Any:
        for n in names:
            if n in named and hasattr(named[n], "dtype"):
                return named[n]
        raise InputError(
            f"{self.name}: {what} must come from a tensor argument named one of {', '.join(names)}, got arguments "
            f"{', '.join(sorted(named))}"
        )

    def dtype(self, named: Mapping[str, Any]) -> str:
        if isinstance(named.get("dtype"), str) and not any(n in named for n in self.dtype_from):
            t: Any = type("Named", (), {"dtype": named["dtype"]})  # a shape dict that names its dtype
        else:
            t = self._tensor(self.dtype_from, "the dtype", named)
        name = str(t.dtype).replace("torch.", "")
        if name not in DTYPES:
            raise InputError(f"{self.name}: dtype must be fp16, bf16 or fp32, got {name} (argument dtype_from)")
        return DTYPES[name]

    def layout(self, named: Mapping[str, Any], p: Mapping[str, Any]) -> str:
        if named.get("layout") in ("nn", "nt") and not any(n in named for n in self.layout_from):
            return str(named["layout"])
        b = self._tensor(self.layout_from, "the layout", named)
        strides = tuple(b.stride()) if callable(getattr(b, "stride", None)) else ()
        if len(strides) < 2:
            return "nn"
        if strides[-1] == 1 or p.get("n") == 1:
            return "nn"
        if strides[-2] == 1:
            return "nt"
        raise InputError(f"{self.name}: B must have a unit stride along N or K, got strides {strides}")

    # ------------------------------------------------------------------ the config
    def split(self, kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """(the model's knobs, the meta-parameters no knob takes) of one config's keyword arguments."""
        knobs: dict[str, Any] = {**KNOB_DEFAULTS[self.family], **self.fixed}
        unmapped = []
        for k, v in kwargs.items():
            if k in self.meta:
                knobs[self.meta[k]] = v
            elif k in self.ignore or (k in NEUTRAL and v == NEUTRAL[k]):
                continue
            else:
                unmapped.append(k)
        return knobs, unmapped

    def config(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The model's config dict of a config's keyword arguments (meta-parameters + num_warps, num_stages)."""
        knobs, unmapped = self.split(kwargs)
        if unmapped:
            raise InputError(
                f"{self.name}: meta-parameters {', '.join(sorted(unmapped))} map to no knob of the {self.family} "
                f"model (map them with meta={{...}}, or list them in ignore=(...) when they do not change the time)"
            )
        missing = [k for k in REQUIRED[self.family] if k not in knobs]
        if missing:
            raise InputError(
                f"{self.name}: a {self.family} config must give {', '.join(missing)} (meta mapping "
                f"{dict(self.meta)}), got {dict(kwargs)}"
            )
        if self.family == "gemm":
            knobs.update(persistent=False, warp_specialize=False, stream_b=False)
        return knobs

    def fingerprint(self) -> str:
        """What a calibration file is for: the family, the name and the knob mapping (not the functions)."""
        text = json.dumps(
            {"family": self.family, "name": self.name, "meta": dict(sorted(self.meta.items())),
             "fixed": {k: repr(v) for k, v in sorted(self.fixed.items())}},
            sort_keys=True,
        )  # fmt: skip
        return hashlib.sha1(text.encode()).hexdigest()[:12]


def describe(
    family: str,
    *,
    name: str = "kernel",
    args: Mapping[str, Any] | None = None,
    meta: Mapping[str, str] | None = None,
    fixed: Mapping[str, Any] | None = None,
    ignore: tuple[str, ...] | list[str] = (),
    dtype_from: str | tuple[str, ...] | None = None,
    layout_from: str | tuple[str, ...] | None = None,
    gpu: str = _gpus.DEFAULT_GPU,
    bytes_per_program: ArgFn | None = None,
    flops_per_program: ArgFn | None = None,
    programs: ArgFn | None = None,
    elements_per_program: ArgFn | None = None,
) -> KernelDescription:
    """A kernel description with the family's defaults (tutorial names) overridden by what is given.

    args: problem field -> argument name (or a literal, or fn(named_args)); merged over the defaults
        (gemm: {"m": "M", "n": "N", "k": "K"}).
    meta: meta-parameter -> knob, merged over the defaults (BLOCK_SIZE_M / BLOCK_M -> block_m, ...).
    fixed: knobs the kernel does not expose (a GEMM without GROUP_M runs row-major: group_m 1).
    ignore: meta-parameters that leave the time unchanged (kept in the config, not in the model).
    bytes_per_program, flops_per_program, programs (family "stream", required): fn(named_args, knobs)
        with knobs the config's meta-parameters plus num_warps and num_stages.
    """
    if family not in FAMILIES:
        raise InputError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")
    if not isinstance(name, str) or not name:
        raise InputError(f"name must be a non-empty string, got {name!r}")
    g = _gpus.get(gpu).key
    knobs = set(KNOB_DEFAULTS[family]) | set(REQUIRED[family])
    if family == "gemm":
        knobs |= {"group_m", "split_k"}
    m = {**DEFAULT_META[family], **dict(meta or {})}
    bad = {k: v for k, v in m.items() if v not in knobs}
    if bad and family != "stream":
        raise InputError(f"meta must map to knobs of the {family} model ({', '.join(sorted(knobs))}), got {bad}")
    for k, v in (fixed or {}).items():
        if k not in knobs:
            raise InputError(f"fixed must name knobs of the {family} model ({', '.join(sorted(knobs))}), got {k!r}")
        if not isinstance(v, (int, bool)):
            raise InputError(f"fixed[{k!r}] must be an integer, got {v!r}")
    a = {**DEFAULT_ARGS[family], **dict(args or {})}
    if family == "stream":
        for fname, fn in (("bytes_per_program", bytes_per_program), ("programs", programs)):
            if not callable(fn):
                raise InputError(f"family 'stream' needs {fname}=fn(named_args, knobs), got {fn!r}")
    dt = (dtype_from,) if isinstance(dtype_from, str) else tuple(dtype_from or DEFAULT_DTYPE_FROM[family])
    lay = (layout_from,) if isinstance(layout_from, str) else tuple(layout_from or DEFAULT_LAYOUT_FROM)
    return KernelDescription(
        family=family, name=name, args=a, meta=m, fixed=dict(fixed or {}), ignore=tuple(ignore), dtype_from=dt,
        layout_from=lay, gpu=g, bytes_per_program=bytes_per_program, flops_per_program=flops_per_program,
        programs=programs, elements_per_program=elements_per_program,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------- streaming


def stream_prediction(
    desc: KernelDescription,
    named: Mapping[str, Any],
    knobs: Mapping[str, Any],
    rates: Mapping[str, float] | None = None,
) -> _predict.Prediction:
    """Time of one launch of a memory-bound kernel: its programs stream their bytes at the bandwidth the
    resident programs keep in flight (Little's law with the calibrated memory latency, capped by the
    measured read bandwidth), each generation of programs pays one load round trip and its fill, and
    the issued lanes (masked ones too) run at the SM's FP32 rate times the kernel's issue rate.

    rates: {"stream", "mma", "fixed"}: the share of Little's-law bandwidth, the issue rate (share of the
    FP32 peak), the scale of the per-generation fill (calibrated per kernel; 1.0 / 0.25 / 1.0 without)."""
    assert desc.bytes_per_program is not None and desc.programs is not None
    r = {"stream": 1.0, "mma": 0.25, "fixed": 1.0, **(rates or {})}
    mach = _predict.machine(desc.gpu)
    g = _gpus.get(desc.gpu)
    nbytes = float(desc.bytes_per_program(named, knobs))
    progs = int(desc.programs(named, knobs))
    flops = float(desc.flops_per_program(named, knobs)) if desc.flops_per_program else 0.0
    lanes = float(desc.elements_per_program(named, knobs)) if desc.elements_per_program else 0.0
    warps = int(knobs.get("num_warps", 4))
    if nbytes < 0 or progs < 0:
        raise InputError(f"{desc.name}: bytes_per_program and programs must be >= 0, got {nbytes}, {progs}")
    threads = 32 * warps
    # registers: the lanes a thread holds (4 B each, in flight at once) over a base of 32
    regs = int(min(255, 32 + 2 * lanes / threads)) if lanes else 64
    try:
        b = max(1, _occupancy(g.key, threads=threads, registers=regs, dynamic_smem=0).blocks_per_sm)
    except InputError:
        b = 1
    slots = mach.sms * b
    active = min(max(progs, 1), slots)
    gens = cdiv(max(progs, 1), slots)
    inflight = active * nbytes
    bw = max(1e9, min(mach.read_bps * min(1.0, r["stream"]), r["stream"] * inflight / mach.latency_s))
    t_hbm = progs * nbytes / bw
    # FP32 lanes: 128 per SM per cycle at the tensor clock (an approximation: the SM clock under load)
    fp32 = 128 * mach.sms * g.tensor_clock_mhz * 1e6 * r["mma"]
    t_issue = cdiv(max(progs, 1), mach.sms) * max(flops, lanes) / (fp32 / mach.sms)
    t_fixed = gens * (mach.latency_s + mach.fill_s) * r["fixed"]
    body = _predict.overlap((t_hbm, t_issue), mach.overlap_p)
    total = body + t_fixed + mach.launch_s
    terms = {"hbm": t_hbm * 1e3, "issue": t_issue * 1e3, "prologue_epilogue": t_fixed * 1e3,
             "launch": mach.launch_s * 1e3}  # fmt: skip
    binding = max(("hbm", "issue", "prologue_epilogue"), key=lambda k: terms[k])
    detail = {"programs": progs, "blocks_per_sm": b, "bytes_per_program": nbytes, "bytes_in_flight": inflight,
              "generations": gens, "rates": dict(r)}  # fmt: skip
    return _predict.Prediction("stream", total * 1e3, terms, binding, mach.key, mach.calibrated, detail)


def predict_ms(
    desc: KernelDescription,
    named: Mapping[str, Any],
    kwargs: Mapping[str, Any],
    rates: Mapping[str, float] | None = None,
) -> float:
    """Predicted ms of one launch with one config's keyword arguments (meta-parameters + num_warps ...)."""
    knobs = desc.config(kwargs)
    if desc.family == "stream":
        return stream_prediction(desc, named, {**kwargs, **knobs}, rates).ms
    p = desc.problem(named)
    eff = dict(rates) if rates else {}
    if desc.family == "gemm" and "misaligned" not in eff:
        # the per-config cost of misaligned rows was fitted on tilewise's own GEMM loads: another kernel's config
        # with the same tiles (the same tag) takes the family's constant (flaggems_mm's built-in top-3 within 2%:
        # 77% with it, 67% with the per-config costs; benchmarks/results/h200/autotune_external.json)
        eff["misaligned"] = _predict.machine(desc.gpu).misaligned_cost
    return float(_predict.predict(desc.family, p, knobs, desc.gpu, efficiency=eff or None).ms)


def config_tag(desc: KernelDescription, kwargs: Mapping[str, Any]) -> str:
    """One config's name in a calibration file: its knobs (or, for "stream", every keyword) sorted."""
    knobs = desc.config(kwargs)
    if desc.family == "stream":
        knobs = {**{k: v for k, v in kwargs.items() if k not in NEUTRAL}, **knobs}
    return ",".join(f"{k}={knobs[k]}" for k in sorted(knobs) if not isinstance(knobs[k], bool) or knobs[k])


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


__all__ = ["FAMILIES", "KernelDescription", "config_tag", "describe", "predict_ms", "stream_prediction"]
