"""Where the Gluon forward's warps wait on a short and a long sequence: Nsight Compute's stall samples per SASS line.

    python3 benchmarks/probes/attention_stall_ncu.py --launch 512      # one timed launch of a shape (for ncu)
    python3 benchmarks/probes/attention_stall_ncu.py --profile DIR     # ncu over both shapes, CSVs into DIR
    python3 benchmarks/probes/attention_stall_ncu.py --csv DIR --out attention_stall_ncu.json   # no GPU needed

The question: at S 512 (B32 H16 D128 bf16 non-causal, 4 key tiles per CTA tile) the forward runs 0.78x cuDNN,
at S 4096 (B4 H16, 32 key tiles) 0.99x, and the fitted model puts a CTA tile's fixed work at 3 steady K/V
periods. Stall samples say which instructions that time is spent at. `--profile` runs
`ncu --clock-control none --section SourceCounters --section WarpStateStats` on one launch of each shape (the
kernel compiled and warmed before, `--launch-skip 2`), then exports the report's SASS page and details page as
CSV. `--csv` groups the samples by what the instruction is (an mbarrier wait, a wgmma wait, a global store, the
exp2 unit, ...) and lists the 25 costliest instructions with their index; the stall reasons per partition in
attention_stall_ncu.json's meta were summed by hand over the SASS ranges of each partition in the CSV.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))

SHAPES = {512: (32, 16, 512, 128), 4096: (4, 16, 4096, 128)}  # S -> (B, H, S, D); B * S = 16k, H * D = 2048
SAMPLE_COLS = ("Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)")

# SASS opcode -> what the instruction is, for grouping the samples (sm_90)
KINDS = (
    (r"^SYNCS\.(PHASECHK|ARRIVE)", "mbarrier wait / arrive"),
    (r"^WARPGROUP\.(DEPBAR|ARRIVE)|^WARPSYNC", "wgmma wait / fence"),
    (r"^HGMMA", "wgmma issue"),
    (r"^UTMALDG|^UBLKCP|^UTMASTG|^UTMACCTL", "TMA"),
    (r"^STG|^ST\.", "global store"),
    (r"^STS|^LDS|^LDSM|^STSM", "shared memory"),
    (r"^MUFU", "exp2 / reciprocal (MUFU)"),
    (r"^BAR|^BSYNC|^BSSY|^NANOSLEEP|^YIELD", "barrier / branch sync"),
    (r"^(FMUL|FADD|FFMA|FMNMX|F2FP|FSEL|FSETP|F2F)", "fp32 math"),
    (
        r"^(IMAD|IADD|ISETP|LOP|SHF|LEA|MOV|SEL|S2R|S2UR|R2UR|UMOV|ULDC|UIADD|ULOP|USHF|ISETP|PLOP|P2R|R2P)",
        "integer / moves",
    ),
    (r"^(BRA|EXIT|RET|CALL|BRX|JMP)", "branch"),
)


def kind(opcode: str) -> str:
    for pat, name in KINDS:
        if re.match(pat, opcode):
            return name
    return "other"


def launch(seq: int) -> None:
    """Two warm calls, a sync, then the call ncu profiles (`--launch-skip 2 -c 1`)."""
    import torch

    from tilewise.kernels import attention_gluon as ag

    b, h, s, d = SHAPES[seq]
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    for _ in range(2):
        ag.gluon_attention(q, k, v, causal=False)
    torch.cuda.synchronize()
    ag.gluon_attention(q, k, v, causal=False)
    torch.cuda.synchronize()


def profile(folder: str) -> int:
    os.makedirs(folder, exist_ok=True)
    for seq in SHAPES:
        rep = os.path.join(folder, f"s{seq}")
        cmd = ["ncu", "--clock-control", "none", "--section", "SourceCounters", "--section", "WarpStateStats",
               "-k", "regex:_fa3_fwd_kernel", "--launch-skip", "2", "-c", "1", "-f", "-o", rep,
               sys.executable, os.path.abspath(__file__), "--launch", str(seq)]  # fmt: skip
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
        if r.returncode != 0:
            print(r.stdout[-2000:], r.stderr[-2000:], file=sys.stderr)
            return 1
        for page, extra in (("source", ["--print-source", "sass"]), ("details", [])):
            out = subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", page, "--csv", *extra],
                                 capture_output=True, text=True, timeout=300)  # fmt: skip
            with open(os.path.join(folder, f"s{seq}_{page}.csv"), "w") as f:
                f.write(out.stdout)
    return 0


def _num(x: str) -> float:
    try:
        return float(x.replace(",", ""))
    except (ValueError, AttributeError):
        return 0.0


def summarize(path: str) -> dict:
    """One shape's SASS CSV -> samples by kind and by partition region, and the 25 costliest instructions."""
    with open(path) as f:
        lines = [ln for ln in f if ln.startswith('"')]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"Address"')), 0)  # after the kernel-name line
    rows = list(csv.DictReader(lines[start:]))
    if not rows:
        raise SystemExit(f"attention_stall_ncu: no SASS rows in {path}")
    col = next(c for c in SAMPLE_COLS if c in rows[0])
    src = "Source" if "Source" in rows[0] else next(c for c in rows[0] if "Source" in c)
    total = sum(_num(r[col]) for r in rows) or 1.0
    by_kind: dict[str, float] = defaultdict(float)
    insts = []
    for i, r in enumerate(rows):
        text = r[src].strip()
        op = text.split()[0] if text else ""
        if op.startswith("@"):  # predicated: the opcode follows the predicate
            op = text.split()[1] if len(text.split()) > 1 else ""
        n = _num(r[col])
        by_kind[kind(op)] += n
        insts.append({"index": i, "address": r.get("Address", ""), "sass": text[:90], "samples": n,
                      "share": n / total})  # fmt: skip
    top = sorted(insts, key=lambda x: -x["samples"])[:25]
    return {
        "samples": total,
        "column": col,
        "instructions": len(rows),
        "by_kind": {k: round(v / total, 4) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])},
        "top": top,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launch", type=int, choices=sorted(SHAPES), help="run one shape (under ncu)")
    ap.add_argument("--profile", metavar="DIR", help="run ncu over every shape, CSVs into DIR")
    ap.add_argument("--csv", metavar="DIR", help="summarize the CSVs of DIR (no GPU)")
    ap.add_argument("--out", default="attention_stall_ncu.json")
    a = ap.parse_args(argv)
    if a.launch:
        launch(a.launch)
        return 0
    if a.profile:
        return profile(a.profile)
    if a.csv:
        out = {}
        for seq in SHAPES:
            p = os.path.join(a.csv, f"s{seq}_source.csv")
            if not os.path.exists(p):
                print(f"attention_stall_ncu: expected {p} (from --profile), not found", file=sys.stderr)
                return 2
            out[f"S{seq}"] = summarize(p)
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
        for name, s in out.items():
            print(name, json.dumps(s["by_kind"]))
        return 0
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
