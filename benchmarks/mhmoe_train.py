"""MH-MoE training step (forward + backward) on tilewise's grouped GEMMs vs torch._grouped_mm + autograd.

Writes benchmarks/results/h200/mhmoe_train.json (or --out). For each shape, two rows:

* `mhmoe_experts_train`: the expert FFN alone, z [T H, d_h] and the routing weights in, out and the
  gradients of z, weights, w_gate_up and w_down back: ours is torch.ops.tilewise.moe_experts and its
  registered backward (grouped GEMMs + the grouped dW kernel), the peer the same routing on
  torch._grouped_mm with gather / SiLU * mul / scale / scatter in torch, differentiated by torch.
* `mhmoe_layer_train`: the whole MultiHeadMoE layer (W_in, router, top-k, sort, experts, W_out) with
  the expert FFN swapped for the peer on the peer side: same parameters, same routing.

Side by side in one process, alternating which side goes first every round, the same inputs, L2
flushed (a 256 MiB write) before every timed call, CUDA events, medians with p20/p80 over the rounds;
the same step captured in a CUDA graph and replayed, beside the eager time. FLOPs: a training step
of the expert FFN is 3 x the forward's (tilewise.model.traffic.moe_layer_flops): 9 GEMM units.

    PYTHONPATH=src python3 benchmarks/mhmoe_train.py --out benchmarks/results/h200/mhmoe_train.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import statistics
import sys

import torch

from tilewise.bench import harness
from tilewise.bench.mhmoe_peer import experts_forward_torch
from tilewise.kernels import custom_ops, mhmoe
from tilewise.model import traffic

# (tokens, heads, head_dim, experts per head, expert width, top_k): the seeds' MH-MoE at d_model 2048,
# ~1024 rows per expert (A) and ~128 rows per expert (B: 256 experts; torch._grouped_mm takes < 1024 groups)
SHAPES = [(4096, 16, 128, 8, 256, 2), (2048, 8, 128, 32, 128, 2)]


def _quantiles(xs):
    s = sorted(xs)
    q = statistics.quantiles(s, n=5) if len(s) >= 5 else [s[0]] * 4
    return statistics.median(s), q[0], q[3]


def _graph(fn):
    """Capture fn() (after a warm-up on a side stream) in a CUDA graph; returns its replay, or None + why."""
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        return g.replay, None
    except Exception as e:  # a capture failure is a result to record, not a crash of the run
        torch.cuda.synchronize()
        return None, f"{type(e).__name__}: {str(e)[:200]}"


def time_alternating(fns: dict, rounds: int) -> dict:
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    names = list(fns)
    times = {n: [] for n in names}
    for _ in range(3):
        for n in names:
            fns[n]()
    torch.cuda.synchronize()
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for n in order:
            flush.zero_()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fns[n]()
            b.record()
            b.synchronize()
            times[n].append(a.elapsed_time(b))
    return {n: _quantiles(t) for n, t in times.items()}


def rel(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30)).item()


def run_shape(T, H, dh, Eh, f, k, rounds, tags, device="cuda", dt=torch.bfloat16):
    """Rows for one shape; on the CPU (--smoke, under TRITON_INTERPRET=1) only the agreement with the peer."""
    torch.manual_seed(0)
    layer = mhmoe.MultiHeadMoE(H * dh, H, dh, Eh, f, k, device=device, dtype=dt)
    E = layer.num_experts
    x = torch.randn(T, H * dh, device=device, dtype=dt)
    with torch.no_grad():
        z0, w0, experts = layer.route(x)
        p = mhmoe.plan(w0, experts, E)
    z = z0.contiguous().requires_grad_()
    sw = w0.clone().requires_grad_()  # [T H, k] fp32
    wgu, wd = layer.w_gate_up, layer.w_down
    dout = torch.randn(T * H, dh, device=device, dtype=dt)
    inputs = (z, sw, wgu, wd)

    def ours():
        out = custom_ops.moe_experts(z, sw, p.slot_of, p.offsets, wgu, wd)
        return (out, *torch.autograd.grad(out, inputs, dout))

    def peer():
        pp = dataclasses.replace(p, scale=sw.reshape(-1)[p.slot_of.long()])  # differentiable in the weights
        out = experts_forward_torch(z, pp, wgu, wd)
        return (out, *torch.autograd.grad(out, inputs, dout))

    a, b = ours(), peer()
    diffs = {n: rel(u, v) for n, u, v in zip(("out", "dz", "dweights", "dw_gate_up", "dw_down"), a, b)}
    rows = []
    fl = 3 * traffic.moe_layer_flops(T * H, k, dh, f)
    counts = torch.diff(p.offsets.long(), prepend=p.offsets.new_zeros(1).long())
    shape = f"T{T}_H{H}_dh{dh}_E{Eh}_f{f}_k{k}"

    # the whole layer: same parameters and routing; the peer side swaps in the torch expert FFN
    xg = x.clone().requires_grad_()
    dy = torch.randn(T, H * dh, device=device, dtype=dt)
    params = [xg, *layer.parameters()]

    def layer_ours():
        out = layer(xg)
        return torch.autograd.grad(out, params, dy)

    def layer_peer():
        layer.experts_forward = lambda zz, pp: experts_forward_torch(zz, pp, layer.w_gate_up, layer.w_down)
        try:
            out = layer(xg)
        finally:
            del layer.experts_forward
        return torch.autograd.grad(out, params, dy)

    layer_diff = max(rel(u, v) for u, v in zip(layer_ours(), layer_peer()))
    if device == "cpu":
        return [{"shape": shape, "layer_rel_diff": layer_diff, **diffs}]
    for kernel, fo, fp, extra in (
        ("mhmoe_experts_train", ours, peer, {f"rel_diff_vs_peer_{n}": v for n, v in diffs.items()}),
        ("mhmoe_layer_train", layer_ours, layer_peer, {"rel_diff_vs_peer_max_grad": layer_diff}),
    ):
        t = time_alternating({"ours": fo, "peer": fp}, rounds)
        go, why_o = _graph(fo)
        gp, why_p = _graph(fp)
        graph = {}
        if go and gp:
            tg = time_alternating({"ours": go, "peer": gp}, rounds)
            graph = {"ours_graph_ms": tg["ours"][0], "peer_graph_ms": tg["peer"][0]}
        else:
            graph = {"graph_error_ours": why_o, "graph_error_peer": why_p}
        ms_o, ms_p = t["ours"][0], t["peer"][0]
        row = {
            "kernel": kernel, "shape": shape, "dtype": "bf16", "peer": "torch._grouped_mm + torch autograd",
            "ours_ms": ms_o, "peer_ms": ms_p, "speedup": ms_p / ms_o,
            "ours_p20_ms": t["ours"][1], "ours_p80_ms": t["ours"][2],
            "peer_p20_ms": t["peer"][1], "peer_p80_ms": t["peer"][2],
            "expert_ffn_tflops": fl / ms_o / 1e9, "expert_ffn_flops": fl, **graph,
            "experts": E, "rows_per_expert_mean": float(counts.float().mean()),
            "rows_per_expert_min": int(counts.min()), "rows_per_expert_max": int(counts.max()),
            "rounds": rounds, **extra, **tags,
        }  # fmt: skip
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/h200/mhmoe_train.json")
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--smoke", action="store_true", help="CPU check of ours vs the peer (TRITON_INTERPRET=1)")
    args = ap.parse_args(argv)
    if args.smoke:
        print(run_shape(37, 2, 16, 3, 32, 2, 0, {}, device="cpu", dt=torch.float32))
        return
    command = "PYTHONPATH=src python3 benchmarks/mhmoe_train.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    tags = harness.env_tags(command)
    rows = []
    for s in SHAPES:
        rows += run_shape(*s, args.rounds, tags)
        with open(args.out, "w") as fh:
            json.dump({"rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
