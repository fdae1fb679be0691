"""Problem shapes on the `tilewise bench` command line, and what the suites derive from a shape.

Every suite takes its named presets or the user's own shapes. A shape list is one string; shapes are
separated by ';' (or ',' for GEMM's MxNxK, which has no commas inside) and each shape's fields by ','.
Counts may carry a k suffix (32k = 32768). A mistake raises `InputError` naming the option, what was
expected and what was given, before any GPU work starts (the CLI prints it on one line, exit 2).

Pure Python: no torch, so the CLI can check the arguments on a machine without a GPU.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from tilewise.errors import InputError, positive_int
from tilewise.model import waves
from tilewise.util import cdiv

# ------------------------------------------------------------------------------------- fields


def count(option: str, name: str, text: str) -> int:
    """A positive integer field, '32768' or '32k' (k = 1024)."""
    t = str(text).strip().lower()
    mult = 1
    if t.endswith("k"):
        mult, t = 1024, t[:-1]
    try:
        value = int(t) * mult
    except ValueError:
        raise InputError(f"{option}: {name} must be a positive integer such as 4096 or 32k, got {text!r}") from None
    return positive_int(f"{option}: {name}", value)


def int_list(option: str, text: str) -> list[int]:
    """'4096,16384' -> [4096, 16384]: positive integers (k suffix allowed), at least one."""
    out = [count(option, "each value", part) for part in str(text).split(",") if part.strip()]
    if not out:
        raise InputError(f"{option}: expected a comma list of positive integers such as 4096,16384, got {text!r}")
    return out


def _parts(option: str, text: str, sep: str = ";") -> list[str]:
    parts = [p.strip() for p in str(text).split(sep) if p.strip()]
    if not parts:
        raise InputError(f"{option}: no shape in {text!r}")
    return parts


def _fields(option: str, part: str, names: Sequence[str], optional: int = 0) -> list[str]:
    fields = [f.strip() for f in part.split(",")]
    if not len(names) - optional <= len(fields) <= len(names):
        want = ",".join(names)
        n = f"{len(names) - optional} or {len(names)}" if optional else str(len(names))
        raise InputError(f"{option}: each shape is {want} ({n} fields), got {part!r}")
    return fields


# --------------------------------------------------------------------------------------- GEMM


def gemm(text: str, presets: Mapping[str, Sequence[tuple[int, int, int]]]) -> list[tuple[int, int, int]]:
    """A preset name or 'MxNxK[,MxNxK...]' ('64x24576x8192,3000x5000x700')."""
    t = str(text).strip().lower()
    if t in presets:
        return list(presets[t])
    shapes = []
    for part in t.replace("×", "x").replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        dims = part.split("x")
        if len(dims) != 3:
            raise InputError(f"--shapes: each shape must look like MxNxK (e.g. 64x24576x8192), got {part!r}")
        try:
            m, n, k = (int(d) for d in dims)
        except ValueError:
            raise InputError(f"--shapes: MxNxK must be integers, got {part!r}") from None
        shapes.append((positive_int("M", m), positive_int("N", n), positive_int("K", k)))
    if not shapes:
        raise InputError(f"--shapes: expected {', '.join(presets)} or MxNxK[,MxNxK...], got {text!r}")
    return shapes


# ---------------------------------------------------------------------------------- attention

ATTENTION_HEAD_DIMS = (16, 32, 64, 128, 256)


def attention(
    text: str, presets: Mapping[str, Sequence[tuple[int, int, int, int, int, bool]]]
) -> list[tuple[int, int, int, int, int, bool]]:
    """A preset name or 'B,H,Hkv,S,D,causal;...' (causal 0 or 1; H a multiple of Hkv; D one of 16..256)."""
    t = str(text).strip()
    if t in presets:
        return list(presets[t])
    out = []
    names = ("B", "H", "Hkv", "S", "D", "causal")
    for part in _parts("--shapes", t):
        f = _fields("--shapes", part, names)
        b, h, hk, s, d = (count("--shapes", n, v) for n, v in zip(names, f[:5]))
        if f[5] not in ("0", "1"):
            raise InputError(f"--shapes: causal must be 0 or 1, got {f[5]!r} in {part!r}")
        if h % hk:
            raise InputError(f"--shapes: H must be a multiple of Hkv (grouped-query attention), got H {h}, Hkv {hk}")
        if d not in ATTENTION_HEAD_DIMS:
            raise InputError(f"--shapes: D must be one of {ATTENTION_HEAD_DIMS}, got {d} in {part!r}")
        out.append((b, h, hk, s, d, f[5] == "1"))
    return out


def attention_name(b: int, h: int, hk: int, s: int, d: int, causal: bool) -> str:
    heads = f"H{h}" if hk == h else f"H{h}/{hk}"
    return f"B{b} {heads} S{s} D{d} {'causal' if causal else 'non-causal'}"


# ------------------------------------------------------------------------------------- decode


def even_lengths(batch: int, low: int, high: int) -> list[int]:
    """`batch` sequence lengths evenly spaced from low to high (both included)."""
    if batch == 1:
        return [high]
    return [low + round(i * (high - low) / (batch - 1)) for i in range(batch)]


def _short(n: int) -> str:
    return f"{n // 1024}k" if n % 1024 == 0 else str(n)


def decode(text: str, presets: Sequence[tuple[str, int, int, list[int]]]) -> list[tuple[str, int, int, list[int]]]:
    """'all', preset row numbers ('0,4': numbers all below the preset count) or 'B,Hq,Hkv,L;...'
    -> [(name, Hq, Hkv, lengths)].

    L is one length for the whole batch (32768 or 32k), a range LOW-HIGH (B lengths evenly spaced:
    '32,32,8,1k-64k' is the preset's variable-length batch) or B lengths separated by '/'."""
    t = str(text).strip()
    if t == "all":
        return list(presets)
    fields = [p.strip() for p in t.split(",") if p.strip()]
    if fields and all(p.isdigit() and int(p) < len(presets) for p in fields) and ";" not in t:
        # Numbers all below the preset count pick preset rows ('0,4'); a shape's L is never that short.
        return [presets[int(p)] for p in fields]
    out = []
    names = ("B", "Hq", "Hkv", "L")
    for part in _parts("--shapes", t):
        f = _fields("--shapes", part, names)
        b, hq, hk = (count("--shapes", n, v) for n, v in zip(names, f[:3]))
        if hq % hk:
            raise InputError(f"--shapes: Hq must be a multiple of Hkv (grouped-query attention), got Hq {hq}, Hkv {hk}")
        spec = f[3]
        if "/" in spec:
            lens = [count("--shapes", "each length", x) for x in spec.split("/")]
            if len(lens) != b:
                raise InputError(f"--shapes: B is {b} but {len(lens)} lengths are given in {part!r}")
            label = f"varlen {_short(min(lens))}-{_short(max(lens))}"
        elif "-" in spec:
            lo_t, _, hi_t = spec.partition("-")
            lo, hi = count("--shapes", "the shortest length", lo_t), count("--shapes", "the longest length", hi_t)
            if lo > hi:
                raise InputError(f"--shapes: a length range runs LOW-HIGH, got {spec!r}")
            lens = even_lengths(b, lo, hi)
            label = f"varlen {_short(lo)}-{_short(hi)}"
        else:
            lens = [count("--shapes", "L", spec)] * b
            label = f"L{_short(lens[0])}"
        out.append((f"B{b} Hq{hq} Hkv{hk} {label}", hq, hk, lens))
    return out


# ------------------------------------------------------------------------------------ grouped


def zipf_counts(experts: int, total: int, s: float = 1.0, seed: int = 0) -> list[int]:
    """Rows per expert ~ 1 / rank^s, experts in a random (seeded) order; sums to `total`."""
    w = [1.0 / (r + 1) ** s for r in range(experts)]
    z = sum(w)
    counts = [int(total * x / z) for x in w]
    counts[0] += total - sum(counts)
    random.Random(seed).shuffle(counts)
    return counts


def _rows(part: str, experts: int, spec: str) -> tuple[list[int], str]:
    s = spec.strip().lower()
    if s.startswith("zipf"):
        mean = count("--shapes", "zipf's mean rows per expert", s[4:]) if s[4:] else 128
        return zipf_counts(experts, experts * mean), s
    if "/" in s:
        counts = [positive_int("--shapes: rows of an expert", _nonneg(part, x), minimum=0) for x in s.split("/")]
        if len(counts) != experts:
            raise InputError(f"--shapes: E is {experts} but {len(counts)} expert row counts are given in {part!r}")
        if not sum(counts):
            raise InputError(f"--shapes: every expert has 0 rows in {part!r}")
        return counts, f"{min(counts)}..{max(counts)}"
    rows = count("--shapes", "rows per expert", s)
    return [rows] * experts, str(rows)


def _nonneg(part: str, x: str) -> int:
    try:
        return int(x)
    except ValueError:
        raise InputError(f"--shapes: expert row counts must be integers >= 0, got {x!r} in {part!r}") from None


def grouped(text: str, presets: Mapping[str, str]) -> list[tuple[str, list[int], int, int]]:
    """Preset names and/or 'E,R,K,N' shapes -> [(label, rows per expert, K, N)].

    R is rows per expert (an integer), 'zipf' / 'zipfM' (Zipf-skewed routing, mean M rows per expert,
    default 128) or E counts separated by '/'. A preset is a name for such a shape."""
    out = []
    for part in _parts("--shapes", split_names(text, presets)):
        spec = presets.get(part, part)
        if "," not in spec:
            raise InputError(f"--shapes: expected names of {list(presets)} or E,R,K,N shapes, got {part!r}")
        f = _fields("--shapes", spec, ("E", "R", "K", "N"))
        e = count("--shapes", "E", f[0])
        k, n = count("--shapes", "K", f[2]), count("--shapes", "N", f[3])
        counts, rows = _rows(spec, e, f[1])
        out.append((f"E{e} rows{rows} K{k} N{n} (T {sum(counts)})", counts, k, n))
    return out


def split_names(text: str, presets: Mapping[str, Any]) -> str:
    """'e128_r8,e128_r16;64,8,2048,1536' -> the same with ';' between every shape (names joined by ',')."""
    pieces = []
    for part in str(text).split(";"):
        if not part.strip():
            continue
        subs = [s.strip() for s in part.split(",") if s.strip()]
        if all(s in presets for s in subs):
            pieces += subs
        else:
            pieces.append(part.strip())
    return ";".join(pieces)


# ---------------------------------------------------------------------------------------- MoE

GATES = ("softmax", "sigmoid")


def moe(
    text: str, presets: Mapping[str, tuple[int, int, int, int, int, str]]
) -> list[tuple[str, int, int, int, int, int, str]]:
    """Preset names and/or 'T,d,f,E,k[,gate]' shapes -> [(name, T, d_model, d_ff, experts, top_k, gate)]."""
    out = []
    for part in _parts("--configs", split_names(text, presets)):
        if part in presets:
            out.append((part, *presets[part]))
            continue
        if "," not in part:
            raise InputError(f"--configs: expected names of {list(presets)} or T,d,f,E,k[,gate] shapes, got {part!r}")
        names = ("T", "d", "f", "E", "k", "gate")
        f = _fields("--configs", part, names, optional=1)
        t, d, ff, e, k = (count("--configs", n, v) for n, v in zip(names, f[:5]))
        gate = f[5] if len(f) == 6 else "softmax"
        if gate not in GATES:
            raise InputError(f"--configs: gate must be one of {GATES}, got {gate!r}")
        if k > e:
            raise InputError(f"--configs: top-k must be at most the number of experts, got k {k}, E {e}")
        out.append((f"T{t}_d{d}_f{ff}_E{e}_k{k}", t, d, ff, e, k, gate))
    return out


def mhmoe(text: str) -> list[tuple[int, int, int, int, int, int]]:
    """'T,H,d_h,E,f,k;...' -> [(tokens, heads, head_dim, experts per head, expert width, top-k)]."""
    out = []
    names = ("T", "H", "d_h", "E", "f", "k")
    for part in _parts("--moe-shapes", text):
        f = _fields("--moe-shapes", part, names)
        t, h, d, e, w, k = (count("--moe-shapes", n, v) for n, v in zip(names, f))
        if k > e:
            raise InputError(f"--moe-shapes: top-k must be at most the experts per head, got k {k}, E {e}")
        out.append((t, h, d, e, w, k))
    return out


# ------------------------------------------------------------------ derived from a shape


def rotation(nbytes: int, l2_bytes: int, limit: int = 64) -> int:
    """Copies of the inputs to cycle through so that the working set is >= 3 L2s."""
    if nbytes >= 3 * l2_bytes:
        return 1
    return min(limit, cdiv(3 * l2_bytes, max(nbytes, 1)))


def grouped_schedule_columns(counts: Sequence[int], K: int, N: int, cfg: Any, sms: int = 132) -> dict[str, Any]:
    """Tiles, waves over the persistent programs (`sms` x programs per SM) and the prologue/epilogue share."""
    sched = waves.grouped_schedule(list(counts), cfg.block_m, N, cfg.block_n)
    tiles = sched.total_tiles
    programs = sms * getattr(cfg, "programs_per_sm", 1)
    return {
        "config": cfg.key(),
        "tiles": tiles,
        "waves": tiles / programs,
        "wave_efficiency": tiles / (math.ceil(tiles / programs) * programs) if tiles else 1.0,
        "prologue_share": waves.persistent_prologue_share(list(counts), K, N, cfg.block_m, cfg.block_n, cfg.block_k),
        "weight_tbps": None,
    }
