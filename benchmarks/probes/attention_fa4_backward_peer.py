"""The attention backward beside FlashAttention-4's (PyPI flash-attn-4, its sm_90 backward), cuDNN SDPA's and SDPA's
flash backend on the H200: a forward + backward step and the forward alone, each side a captured CUDA graph (an
eager loop where a side cannot be captured), replayed in alternating rounds; the backward's time is the step's less
the forward's. Every side's dQ, dK, dV are checked against cuDNN's.

    bash benchmarks/fa4_install.sh WHEEL_DIR   # on the device, once (see that script for the wheels)
    python benchmarks/probes/attention_fa4_backward_peer.py --out benchmarks/results/h200/attention_fa4_backward_peer.json

FA4 reads [B, S, H, D]: it gets transposed views of the same leaf tensors (no copies); its kernels compile at the
first call of each shape, so every side runs once before it is captured.
"""

import os
import time

import torch
from common import parser, save

from tilewise.bench import timing
from tilewise.kernels import attention

PROBLEMS = [  # (B, H, S, D, causal): the backward sweep's head dims, B x S = 16k (each (D, causal) compiles once)
    (4, 32, 4096, 128, False),
    (4, 32, 4096, 128, True),
    (8, 32, 2048, 64, False),
    (4, 8, 4096, 256, False),
]


def _forwards(causal: bool, fa4):
    """Each side's forward on [B, H, S, D] leaves: ours (the dispatch), cuDNN SDPA, SDPA flash, FA4 on views."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    backends = torch.nn.attention.SDPBackend

    def cudnn(q, k, v):
        with torch.nn.attention.sdpa_kernel(backends.CUDNN_ATTENTION):
            return sdpa(q, k, v, is_causal=causal)

    def flash(q, k, v):
        with torch.nn.attention.sdpa_kernel(backends.FLASH_ATTENTION):
            return sdpa(q, k, v, is_causal=causal)

    def fa4_side(q, k, v):
        out = fa4(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=causal)
        out = out[0] if isinstance(out, tuple) else out
        return out.transpose(1, 2)

    sides = {"ours": lambda q, k, v: attention(q, k, v, causal=causal)[0], "cudnn": cudnn, "flash": flash}
    if fa4 is not None:
        sides["fa4"] = fa4_side
    return sides


def _timed(fn, name: str, notes: dict):
    """A CUDA graph of fn where it captures, else None (the row notes why)."""
    try:
        return timing.capture(lambda _i: fn())
    except Exception as e:  # a side that cannot be captured is timed eagerly
        notes[name] = f"not capturable: {type(e).__name__}: {str(e)[:160]}"
        return None


def _eager_ms(fn, reps: int = 20) -> float:
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        ts.append(start.elapsed_time(end))
    return sorted(ts)[len(ts) // 2]


def run_problem(
    B: int, H: int, S: int, D: int, causal: bool, fa4, fa4_error: str | None, rounds: int, reps: int
) -> dict:
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    do = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)
    row: dict = {"problem": {"batch": B, "heads": H, "seq": S, "head_dim": D, "causal": causal, "dtype": "bf16"},
                 "notes": {}}  # fmt: skip
    if fa4_error:
        row["notes"]["fa4"] = fa4_error
    steps, fwds, grads = {}, {}, {}
    for name, f in _forwards(causal, fa4).items():

        def step(f=f):
            return torch.autograd.grad(f(q, k, v), (q, k, v), do)

        try:
            grads[name] = step()
        except Exception as e:  # a side whose backward does not run here is recorded, not timed
            row["notes"][name] = f"backward failed: {type(e).__name__}: {str(e)[:200]}"
            continue
        steps[name] = step
        fwds[name] = lambda f=f: f(q.detach(), k.detach(), v.detach())
    ref = grads.get("cudnn")
    if ref is not None:
        for name, g in grads.items():
            row[f"{name}_max_abs_diff_grads"] = max((x.float() - r.float()).abs().max().item() for x, r in zip(g, ref))
    del grads
    flops_fwd = 4 * B * H * S * S * D * (0.5 if causal else 1.0)
    for kind, fns, flops in (("step", steps, 3.5 * flops_fwd), ("fwd", fwds, flops_fwd)):
        graphs = {n: g for n, fn in fns.items() if (g := _timed(fn, f"{n}_{kind}", row["notes"])) is not None}
        t = timing.time_calls(graphs, rounds=rounds, reps=reps) if graphs else {}
        for n, fn in fns.items():
            ms = t[n].median_ms if n in t else _eager_ms(fn)
            row[f"{n}_{kind}_ms"] = ms
            row[f"{n}_{kind}_tflops"] = flops / (ms * 1e-3) / 1e12
        del graphs
    for n in steps:
        row[f"{n}_bwd_ms"] = row[f"{n}_step_ms"] - row[f"{n}_fwd_ms"]
    for n in steps:
        if n != "ours" and "ours" in steps:
            row[f"ours_bwd_vs_{n}"] = row[f"{n}_bwd_ms"] / row["ours_bwd_ms"]
            row[f"ours_step_vs_{n}"] = row[f"{n}_step_ms"] / row["ours_step_ms"]
    return row


def main() -> None:
    ap = parser(
        __doc__, os.path.join(os.path.dirname(__file__), "..", "results", "h200", "attention_fa4_backward_peer.json")
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    fa4_error = None
    try:
        from flash_attn.cute import flash_attn_func as fa4
    except Exception as e:  # recorded: the other sides still run
        fa4, fa4_error = None, f"{type(e).__name__}: {e}"
    rows = []
    t0 = time.time()
    for B, H, S, D, causal in PROBLEMS:
        row = run_problem(B, H, S, D, causal, fa4, fa4_error, a.rounds, a.reps)
        rows.append(row)
        print({k: (round(x, 3) if isinstance(x, float) else x) for k, x in row.items()}, f"[{time.time() - t0:.0f}s]",
              flush=True)  # fmt: skip
        save(a.out, rows)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
