"""The FlashFFN config sweep behind the tiles in `tilewise.kernels.ffn` (bf16, T 16384, H 16, I 512 unless
given): the forward kernel, the two split-backward kernels (dz, dW) and the atomic-mode backward, each
over its candidate tiles at d_h 128 and 64. `us` is the whole op (the forward kernel, or the whole backward
with one kernel varied and the other at its best so far); `tflops_exec` counts the GEMM units executed
(3 forward, 11 split backward, 8 atomic backward). `best` names the fastest tile per kernel and the faster
backward mode.

    python benchmarks/probes/ffn_sweep.py --out benchmarks/results/h200/ffn_sweep.json

It calls `tilewise.kernels.ffn`'s internal entry points (`_fwd`, `_bwd` with explicit tiles) and, as it
goes, sets the module's tile tables (`_FWD`, `_BWD_DZ`, `_BWD_DW`) to the best found so far, so the
later sweeps run against them; it follows those names if they change.
"""

import json
import re

import torch
from common import parser, save
from ffn_checks import data
from triton.testing import do_bench

from tilewise.kernels import ffn as ff

C = ff.Config
FWD = {
    128: [C(128, 64, 8, 2), C(128, 64, 8, 3), C(128, 64, 8, 4), C(128, 128, 8, 2), C(128, 32, 8, 3), C(128, 32, 4, 4),
          C(64, 64, 4, 3), C(64, 64, 4, 4), C(64, 128, 4, 2), C(128, 64, 4, 3), C(64, 32, 4, 4)],
    64: [C(128, 64, 4, 3), C(128, 64, 8, 3), C(128, 128, 8, 3), C(128, 128, 4, 3), C(64, 128, 4, 3), C(128, 256, 8, 2),
         C(64, 64, 4, 4), C(256, 64, 8, 3), C(128, 64, 4, 4)],
}  # fmt: skip
DZ = {
    128: [C(128, 64, 8, 2), C(128, 64, 8, 3), C(128, 32, 8, 3), C(64, 64, 4, 3), C(64, 128, 8, 2), C(128, 128, 8, 2),
          C(64, 32, 4, 4)],
    64: [C(128, 64, 4, 3), C(128, 64, 8, 3), C(128, 128, 8, 2), C(64, 64, 4, 3), C(64, 128, 4, 3), C(128, 32, 4, 4)],
}  # fmt: skip
DW = {
    128: [C(64, 64, 8, 2), C(64, 64, 4, 2), C(128, 64, 8, 2), C(64, 128, 8, 2), C(128, 32, 8, 2), C(32, 64, 4, 3),
          C(64, 32, 4, 3), C(64, 64, 8, 3)],
    64: [C(64, 64, 4, 2), C(64, 64, 8, 2), C(128, 64, 8, 2), C(64, 128, 8, 2), C(128, 128, 8, 2), C(64, 128, 4, 3),
         C(128, 64, 4, 3)],
}  # fmt: skip
UNITS = {"fwd": 3, "dz": 11, "dw": 11, "dw_atomic": 8}


def key(c) -> str:
    return f"m{c.block_m}n{c.block_n}w{c.num_warps}s{c.num_stages}"


def cfg_of(k: str):
    return C(*(int(x) for x in re.match(r"m(\d+)n(\d+)w(\d+)s(\d+)", k).groups()))


def sweep_one(kind: str, d: int, T: int, H: int, n: int) -> list[dict]:
    z, wg, wu, wd, dy = data(T, H, d, n, torch.bfloat16)
    unit = 2 * T * H * d * n  # FLOPs of one per-head GEMM over all tokens
    base_dz, base_dw = ff.bwd_configs(d)
    run = {
        "fwd": lambda c: ff._fwd(z, wg, wu, wd, cfg=c),
        "dz": lambda c: ff._bwd(z, wg, wu, wd, dy, mode="split", dz_cfg=c, dw_cfg=base_dw),
        "dw": lambda c: ff._bwd(z, wg, wu, wd, dy, mode="split", dz_cfg=base_dz, dw_cfg=c),
        "dw_atomic": lambda c: ff._bwd(z, wg, wu, wd, dy, mode="atomic", dw_cfg=c),
    }[kind]
    out = []
    for c in {"fwd": FWD, "dz": DZ, "dw": DW, "dw_atomic": DW}[kind][d]:
        try:
            ms = do_bench(lambda c=c: run(c), warmup=5, rep=25, return_mode="median")
            r = dict(
                kind=kind, d=d, cfg=key(c), us=round(ms * 1e3, 1), tflops_exec=round(UNITS[kind] * unit / ms / 1e9, 1)
            )
        except Exception as e:  # a tile that does not fit is a finding
            r = dict(kind=kind, d=d, cfg=key(c), error=repr(e)[:300])
        out.append(r)
        print(json.dumps(r), flush=True)
    return out


def best(rows: list[dict], kind: str, d: int) -> dict | None:
    ok = [r for r in rows if r["kind"] == kind and r["d"] == d and "us" in r]
    return min(ok, key=lambda r: r["us"]) if ok else None


def main() -> None:
    p = parser(__doc__, "benchmarks/results/h200/ffn_sweep.json")
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--intermediate", type=int, default=512)
    args = p.parse_args()
    res: dict = {"shape": f"T{args.tokens} H{args.heads} I{args.intermediate} bf16", "rows": []}
    tables = {"fwd": ff._FWD, "dz": ff._BWD_DZ, "dw": ff._BWD_DW}
    for kind in ("fwd", "dw", "dz", "dw_atomic"):
        for d in (128, 64):
            res["rows"] += sweep_one(kind, d, args.tokens, args.heads, args.intermediate)
            b = best(res["rows"], kind, d)
            if b and kind in tables:  # the later sweeps run against the best found so far
                tables[kind][d] = cfg_of(b["cfg"])
            save(args.out, res)
    summary: dict = {}
    for d in (128, 64):
        bs = {k: best(res["rows"], k, d) for k in UNITS}
        summary[d] = {k: (v["cfg"], v["us"]) if v else None for k, v in bs.items()}
        split_us = bs["dz"]["us"] if bs["dz"] else None
        atomic_us = bs["dw_atomic"]["us"] if bs["dw_atomic"] else None
        summary[d]["mode"] = "atomic" if split_us and atomic_us and atomic_us < split_us else "split"
    res["best"] = summary
    save(args.out, res)
    print("best", json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
