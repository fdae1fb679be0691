"""Does the row alignment of the operands bind the TMA GEMM? The same kernel and config on contiguous
operands against the same values in buffers whose rows start on 128-byte boundaries.

    python benchmarks/sweeps/gemm_align.py --out DIR [--rounds 7]

Rows 5000 x 2 B = 10000 B apart start 16-byte aligned (TMA's minimum) but not 128-byte aligned: each
128-byte row of a [rows, 64] bf16 TMA box then touches 5 L2 sectors of 32 B instead of 4. This times,
per shape, `matmul` at the best config of the committed sweep and cuBLAS on (a) contiguous inputs and
(b) views into buffers padded to 64-element rows, with the sweep's method (CUDA graphs over rotating
copies past the 60 MB L2, alternating rounds, median). Rows go to DIR/gemm_align.jsonl with GPU, date,
versions, host CPU and command in every row.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))

import sweep  # noqa: E402

from tilewise.bench import timing  # noqa: E402

CASES = (
    ((5000, 5000, 5000, "nn"), "p128x256x64_g8_s1_w8_st4"),
    ((2000, 3000, 4000, "nn"), "p128x128x64_g8_s1_w8_st4"),
    ((1000, 1000, 1000, "nn"), "p64x128x64_g8_s1_w4_st4"),
    ((3000, 1000, 2000, "nn"), "p128x256x64_g8_s1_w8_st4"),
    ((5000, 5000, 5000, "nt"), "p128x256x64_g8_s1_w8_st4"),
)


def _cfg(tag: str) -> dict:
    from tilewise.advise import space as S

    return next(c for c in S.gemm_grid() if S.gemm_tag(c) == tag)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args(argv)
    import torch

    from tilewise.kernels.gemm import Config, matmul

    os.makedirs(a.out, exist_ok=True)
    env = sweep.env_tags(torch)
    dt = torch.bfloat16
    out = open(os.path.join(a.out, "gemm_align.jsonl"), "w")
    for (m, n, k, layout), tag in CASES:
        fp = (m * k + n * k + m * n) * 2
        copies = max(1, min(8, -(-sweep.L2_ROTATE_BYTES // fp)))

        def padded(rows, cols):
            return torch.empty(rows, -(-cols // 64) * 64, dtype=dt, device="cuda")[:, :cols]

        sets = {"contiguous": [], "rows128": []}
        for i in range(copies):
            g = torch.Generator(device="cuda").manual_seed(i)
            x = torch.randn(m, k, generator=g, dtype=dt, device="cuda")
            w = torch.randn(n, k, generator=g, dtype=dt, device="cuda") if layout == "nt" else None
            y = w.t() if w is not None else torch.randn(k, n, generator=g, dtype=dt, device="cuda")
            sets["contiguous"].append((x, y, torch.empty(m, n, dtype=dt, device="cuda")))
            xp = padded(m, k)
            xp.copy_(x)
            if w is not None:
                wp = padded(n, k)
                wp.copy_(w)
                yp = wp.t()
            else:
                yp = padded(k, n)
                yp.copy_(y)
            sets["rows128"].append((xp, yp, padded(m, n)))
        conf = Config(**_cfg(tag))
        entries = []
        for layout_name, ss in sets.items():
            for src, fn in (
                (tag, lambda s, conf=conf: matmul(s[0], s[1], out=s[2], config=conf)),
                ("cublas", lambda s: torch.matmul(s[0], s[1], out=s[2])),
            ):
                fn(ss[0])
                ref = ss[0][0].float() @ ss[0][1].float()
                err = ((ss[0][2].float() - ref).abs().max() / ref.abs().max()).item()
                calls = max(copies, 8)
                g = timing.capture(lambda i, fn=fn, ss=ss, c=copies: fn(ss[i % c]), calls, warmup=1)
                entries.append(({"layout_rows": layout_name, "source": src, "err": err, "calls": calls}, g))
        torch.cuda.synchronize()
        # alternating rounds over every graph of the problem, round 0 warms them (tilewise.bench.timing)
        timed = timing.time_calls({str(i): g for i, (_row, g) in enumerate(entries)}, rounds=a.rounds, flush=False)
        for i, (row, _g) in enumerate(entries):
            row.update(
                problem={"m": m, "n": n, "k": k, "dtype": "bf16", "layout": layout},
                ms=timed[str(i)].median_ms,
                **env,
            )
            out.write(json.dumps(row) + "\n")
            print(
                f"{m}x{n}x{k} {layout} {row['layout_rows']:10s} {row['source']:28s} {row['ms'] * 1e3:8.1f} us err {row['err']:.2g}",
                flush=True,
            )
        out.flush()
        del entries, sets
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
