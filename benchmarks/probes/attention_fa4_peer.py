"""FlashAttention-4 (PyPI flash-attn-4, CuTe DSL, its sm_90 kernels) beside tilewise's attention and cuDNN SDPA on
the H200: a few forward problems, each side a captured CUDA graph replayed in alternating rounds (L2 flushed),
every side's output checked against SDPA's first.

    bash benchmarks/fa4_install.sh WHEEL_DIR   # on the device, once (see that script for the wheels)
    python benchmarks/probes/attention_fa4_peer.py --out benchmarks/results/h200/attention_fa4_peer.json

FA4 reads [B, S, H, D]: it gets transposed views of the same tensors (no copies). Its kernels compile at the
first call of each shape; the probe calls every side once before capturing.
"""

import os
import time

import torch
from common import parser, save

from tilewise.bench import timing
from tilewise.kernels import attention

PROBLEMS = [  # (B, H, S, D, causal)
    (4, 32, 4096, 128, False),
    (4, 32, 4096, 128, True),
    (32, 16, 512, 128, True),
    (2, 16, 8192, 256, False),
]


def _sides(q, k, v, causal, fa4):
    """The three calls on the same tensors: ours (the dispatch), cuDNN SDPA, FlashAttention-4 on [B, S, H, D] views."""
    return {
        "ours": lambda: attention(q, k, v, causal=causal)[0],
        "cudnn": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
        "fa4": lambda: fa4(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=causal),
    }


def main() -> None:
    ap = parser(__doc__, os.path.join(os.path.dirname(__file__), "..", "results", "h200", "attention_fa4_peer.json"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    from flash_attn.cute import flash_attn_func

    rows = []
    t0 = time.time()
    for B, H, S, D, causal in PROBLEMS:
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        sides = _sides(q, k, v, causal, flash_attn_func)
        row = {"problem": {"batch": B, "heads": H, "seq": S, "head_dim": D, "causal": causal, "dtype": "bf16"}}
        ref = sides["cudnn"]().float()
        for name, fn in sides.items():
            out = fn()
            out = out[0] if isinstance(out, tuple) else out
            if name == "fa4":
                out = out.transpose(1, 2)
            row[f"{name}_max_abs_diff"] = (out.float() - ref).abs().max().item()
        graphs = {name: timing.capture(lambda _i, f=fn: f()) for name, fn in sides.items()}
        t = timing.time_calls(graphs, rounds=a.rounds, reps=a.reps)
        flops = 4 * B * H * S * S * D * (0.5 if causal else 1.0)
        for name, tm in t.items():
            row[f"{name}_graph_ms"] = tm.median_ms
            row[f"{name}_tflops"] = flops / (tm.median_ms * 1e-3) / 1e12
        row["ours_vs_cudnn"] = row["cudnn_graph_ms"] / row["ours_graph_ms"]
        row["ours_vs_fa4"] = row["fa4_graph_ms"] / row["ours_graph_ms"]
        row["fa4_vs_cudnn"] = row["cudnn_graph_ms"] / row["fa4_graph_ms"]
        rows.append(row)
        print({k: (round(x, 3) if isinstance(x, float) else x) for k, x in row.items()}, f"[{time.time() - t0:.0f}s]",
              flush=True)  # fmt: skip
        save(a.out, rows)
        del graphs


if __name__ == "__main__":
    main()
