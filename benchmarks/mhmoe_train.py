"""MH-MoE training step (forward + backward) on tilewise's grouped GEMMs vs torch._grouped_mm + autograd.

Writes benchmarks/results/h200/mhmoe_train.json (or --out). For each shape, two rows:

* `mhmoe_experts_train`: the expert FFN alone, z [T H, d_h] and the routing weights in, out and the
  gradients of z, weights, w_gate_up and w_down back: ours is torch.ops.tilewise.moe_experts and its
  registered backward (grouped GEMMs + the grouped dW kernel + one fused GLU pass each way), the
  peer the same routing on torch._grouped_mm with gather / SiLU * mul / scale / scatter in torch,
  differentiated by torch.
* `mhmoe_layer_train`: the whole MultiHeadMoE layer (W_in, router, top-k, sort, experts, W_out) with
  the expert FFN swapped for the peer on the peer side: same parameters, same routing.

Side by side in one process, alternating which side goes first every round, the same inputs, L2
flushed (a 256 MiB write) before every timed call, CUDA events, medians with p20/p80 over the rounds
(`tilewise.bench.timing`);
the same step captured in a CUDA graph and replayed, beside the eager time (and the replay's output
checked against the eager one). FLOPs: a training step of the expert FFN is 3 x the forward's
(tilewise.model.traffic.moe_layer_flops): 9 GEMM units.

CUDA-graph capture of a backward, two rules this script follows (the 2026-12-01 run broke both):

* Fresh leaves per call. autograd binds a leaf's gradient accumulator to the stream current when the
  leaf first joins a graph; leaves first used eagerly on the default stream made the captured
  backward wait on the legacy stream, which invalidates a capture (cudaErrorStreamCaptureInvalidated,
  both sides). Every timed step differentiates with respect to `t.detach().requires_grad_()` aliases
  made inside the step (no copy, no kernel), so a captured step's accumulators live on its stream.
* No CUDA RNG near a capture. A capture that fails leaves the CUDA generator in capture mode, and the
  next randn on the GPU raised "Offset increment outside graph capture": inputs and parameters are
  drawn on the CPU (seeded) and copied over.

    PYTHONPATH=src python3 benchmarks/mhmoe_train.py --out benchmarks/results/h200/mhmoe_train.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
import time

import torch

from tilewise.bench import harness, timing
from tilewise.bench.mhmoe_peer import experts_forward_torch
from tilewise.kernels import custom_ops, layers, mhmoe
from tilewise.model import traffic

# (tokens, heads, head_dim, experts per head, expert width, top_k): MH-MoE at d_model 2048,
# ~1024 rows per expert (A) and ~128 rows per expert (B: 256 experts; torch._grouped_mm takes < 1024 groups)
SHAPES = [(4096, 16, 128, 8, 256, 2), (2048, 8, 128, 32, 128, 2)]


class PeerMoE(layers.MultiHeadMoE):
    """The layer with its expert stage on torch._grouped_mm (same routing, same parameters via functional_call)."""

    def experts(self, z, weights, experts):
        return experts_forward_torch(z, mhmoe.plan(weights, experts, self.num_experts), self.w_gate_up, self.w_down)


def _sync_check(fn):
    """None, or the first host synchronisation torch reports in one call of fn (such a call cannot be captured)."""
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        fn()
        return None
    except RuntimeError as e:
        return f"{type(e).__name__}: {str(e)[:200]}"
    finally:
        torch.cuda.set_sync_debug_mode("default")
        torch.cuda.synchronize()


def _graph(fn):
    """Capture fn() in a CUDA graph (`tilewise.bench.timing.capture`, 3 warm-up calls on a side stream).

    Returns (replay, static outputs, None) or (None, None, why)."""
    try:
        g = timing.capture(lambda _i: fn(), warmup=3)
        return g.replay, g.out, None
    except Exception as e:  # a capture failure is a result to record, not a crash of the run
        try:
            torch.cuda.synchronize()
        except Exception:
            pass
        return None, None, f"{type(e).__name__}: {str(e)[:200]}"


def time_alternating(fns: dict, rounds: int) -> dict:
    """(median, p20, p80) ms per side: `tilewise.bench.timing.time_calls` (alternating rounds after a warm
    round, the L2 flushed before every timed call, CUDA events)."""
    for fn in fns.values():
        fn()
    t = timing.time_calls(fns, rounds=rounds)
    return {n: (x.median_ms, x.p20_ms, x.p80_ms) for n, x in t.items()}


def _profile(fn, steps=3, top=12):
    """GPU time per step (us) of the `top` costliest kernels in fn, by name (torch.profiler, CUDA activity)."""
    from torch.profiler import ProfilerActivity, profile

    try:
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                fn()
            torch.cuda.synchronize()
        per = {}
        for e in prof.key_averages():
            t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
            if t:
                per[e.key[:80]] = per.get(e.key[:80], 0.0) + t / steps
        ranked = sorted(per.items(), key=lambda kv: -kv[1])
        return {"kernels_us": dict(ranked[:top]), "total_us": sum(per.values())}
    except Exception as e:  # the profiler is a diagnosis: its failure must not cost the row
        return {"error": f"{type(e).__name__}: {str(e)[:200]}"}


def rel(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30)).item()


def max_rel(xs, ys):
    return max(rel(u, v) for u, v in zip(xs, ys))


def _leaves(ts):
    """Aliases of ts that are fresh autograd leaves (no copy; see the module docstring)."""
    return [t.detach().requires_grad_() for t in ts]


def run_shape(
    T, H, dh, Eh, f, k, rounds, tags, device="cuda", dt=torch.bfloat16, emit=None, deadline=None, profile_steps=0
):
    """Rows for one shape; on the CPU (--smoke, under TRITON_INTERPRET=1) only the agreement with the peer."""
    torch.manual_seed(0)  # the CPU generator: parameters and inputs are drawn on the CPU, then copied
    layer = layers.MultiHeadMoE(H * dh, H, dh, Eh, f, k, device="cpu", dtype=dt).to(device)
    peer_layer = PeerMoE(H * dh, H, dh, Eh, f, k, device="meta", dtype=dt)
    names = [n for n, _ in layer.named_parameters()]
    params = [p.detach() for p in layer.parameters()]
    E = layer.num_experts
    x = torch.randn(T, H * dh, dtype=dt).to(device)
    dout = torch.randn(T * H, dh, dtype=dt).to(device)
    dy = torch.randn(T, H * dh, dtype=dt).to(device)
    with torch.no_grad():
        z0, w0, experts = layer.route(x)
        p = mhmoe.plan(w0, experts, E)
    z, sw = z0.contiguous(), w0.contiguous()  # [T H, d_h], fp32 [T H, k]
    wgu, wd = layer.w_gate_up.detach(), layer.w_down.detach()

    def ours():
        inputs = _leaves((z, sw, wgu, wd))
        out = custom_ops.moe_experts(inputs[0], inputs[1], p.slot_of, p.offsets, inputs[2], inputs[3])
        return (out, *torch.autograd.grad(out, inputs, dout))

    def peer():
        zz, ww, a, b = inputs = _leaves((z, sw, wgu, wd))
        pp = dataclasses.replace(p, scale=ww.reshape(-1)[p.slot_of])  # differentiable in the weights
        out = experts_forward_torch(zz, pp, a, b)
        return (out, *torch.autograd.grad(out, inputs, dout))

    def layer_step(module):
        def step():
            leaves = _leaves([x, *params])
            out = torch.func.functional_call(module, dict(zip(names, leaves[1:])), (leaves[0],))
            return (out, *torch.autograd.grad(out, leaves, dy))

        return step

    def ours_table():  # the same step on choose_config's table tiles (mhmoe.TRAIN_TILES)
        saved, mhmoe.TRAIN_TILES = mhmoe.TRAIN_TILES, "table"
        try:
            return ours()
        finally:
            mhmoe.TRAIN_TILES = saved

    layer_ours, layer_peer = layer_step(layer), layer_step(peer_layer)
    shape = f"T{T}_H{H}_dh{dh}_E{Eh}_f{f}_k{k}"
    a = ours()
    try:
        b = peer()
    except Exception as e:  # e.g. a torch without a backward for torch._grouped_mm: say so in the file
        row = {"kernel": "mhmoe_experts_train", "shape": shape, "peer_error": f"{type(e).__name__}: {str(e)[:300]}",
               **tags}  # fmt: skip
        if emit is not None:
            emit(row)
        return [row]
    diffs = {n: rel(u, v) for n, u, v in zip(("out", "dz", "dweights", "dw_gate_up", "dw_down"), a, b)}
    diffs["table_tiles_max"] = max_rel(ours_table(), b)
    layer_diff = max_rel(layer_ours(), layer_peer())
    if rounds == 0:  # --smoke: agreement only
        return [{"shape": shape, "layer_rel_diff": layer_diff, **diffs}]
    rows = []
    fl = 3 * traffic.moe_layer_flops(T * H, k, dh, f)
    counts = torch.diff(p.offsets.long(), prepend=p.offsets.new_zeros(1).long())
    for kernel, fo, fp, extra in (
        ("mhmoe_experts_train", ours, peer, {f"rel_diff_vs_peer_{n}": v for n, v in diffs.items()}),
        ("mhmoe_layer_train", layer_ours, layer_peer, {"rel_diff_vs_peer_max_grad": layer_diff}),
    ):
        sides = {"ours": fo, "peer": fp}
        if fo is ours:
            sides["ours_table"] = ours_table
        t = time_alternating(sides, rounds)
        ms_o, ms_p = t["ours"][0], t["peer"][0]
        if "ours_table" in t:
            extra = {**extra, "ours_table_tiles_ms": t["ours_table"][0], "train_tiles": mhmoe.TRAIN_TILES}
        row = {
            "kernel": kernel, "shape": shape, "dtype": "bf16", "peer": "torch._grouped_mm + torch autograd",
            "ours_ms": ms_o, "peer_ms": ms_p, "speedup": ms_p / ms_o,
            "ours_p20_ms": t["ours"][1], "ours_p80_ms": t["ours"][2],
            "peer_p20_ms": t["peer"][1], "peer_p80_ms": t["peer"][2],
            "expert_ffn_tflops": fl / ms_o / 1e9, "expert_ffn_flops": fl,
            "experts": E, "rows_per_expert_mean": float(counts.float().mean()),
            "rows_per_expert_min": int(counts.min()), "rows_per_expert_max": int(counts.max()),
            "rounds": rounds, "method": "eager: alternating rounds, L2 flushed, CUDA events, median", **extra,
        }  # fmt: skip
        graph = {"sync_ours": _sync_check(fo), "sync_peer": _sync_check(fp)}
        replays, why = {}, {}
        for side, fn in (("ours", fo), ("peer", fp)):
            eager = fn()
            replay, static, why[side] = _graph(fn)
            if replay is not None:
                replay()
                torch.cuda.synchronize()
                graph[f"graph_replay_rel_diff_{side}"] = max_rel(static, eager)
                replays[side] = replay
            else:
                graph[f"graph_error_{side}"] = why[side]
        if len(replays) == 2:
            tg = time_alternating(replays, rounds)
            graph.update(
                ours_graph_ms=tg["ours"][0], peer_graph_ms=tg["peer"][0],
                graph_speedup=tg["peer"][0] / tg["ours"][0],
                ours_graph_p20_ms=tg["ours"][1], ours_graph_p80_ms=tg["ours"][2],
                peer_graph_p20_ms=tg["peer"][1], peer_graph_p80_ms=tg["peer"][2],
            )  # fmt: skip
        elif "ours" in replays:  # ours alone still says what a replay of our step costs
            graph["ours_graph_ms"] = time_alternating({"ours": replays["ours"]}, rounds)["ours"][0]
        row.update(graph)
        if profile_steps and fo is ours:
            row["profile_ours"] = _profile(fo, profile_steps)
            row["profile_peer"] = _profile(fp, profile_steps)
        row.update(tags)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if emit is not None:
            emit(row)
        del replays
        if deadline is not None and time.monotonic() > deadline:
            break  # the run has a wall-clock limit: keep what is measured
    return rows


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/h200/mhmoe_train.json")
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--smoke", action="store_true", help="CPU check of ours vs the peer (TRITON_INTERPRET=1)")
    ap.add_argument("--deadline-s", type=float, default=None, help="start no new measurement after this many seconds")
    ap.add_argument("--shapes", default="all", help="all, or a comma list of indices into SHAPES (default all)")
    ap.add_argument("--profile-steps", type=int, default=3, help="torch.profiler kernel times of the experts step")
    return ap


def main(argv=None):
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.smoke:
        print(run_shape(37, 2, 16, 3, 32, 2, 0, {}, device="cpu", dt=torch.float32))
        return
    command = "python benchmarks/mhmoe_train.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    tags = harness.env_tags(command)
    t0 = time.monotonic()
    deadline = t0 + args.deadline_s if args.deadline_s else None
    shapes = SHAPES if args.shapes == "all" else [SHAPES[int(i)] for i in args.shapes.split(",")]
    rows = []
    # the committed file's own path in the command that reproduces it (the device writes under $OUT)
    default_out = ap.get_default("out")
    reproduce = command.replace(shlex.quote(args.out), default_out) if args.out != default_out else command
    meta = {**tags, "reproduce": reproduce, "started_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}

    def emit(row):  # rows are written as they come: a killed run keeps what it measured
        rows.append(row)
        with open(args.out, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=1)

    for shape in shapes:
        if deadline is not None and time.monotonic() > deadline:
            print(f"deadline: skipped {shape}", flush=True)
            continue
        try:
            run_shape(*shape, args.rounds, tags, emit=emit, deadline=deadline, profile_steps=args.profile_steps)
        except Exception as e:  # one shape's failure must not lose the other's rows
            s = "T{}_H{}_dh{}_E{}_f{}_k{}".format(*shape)
            emit({"kernel": "mhmoe_train", "shape": s, "error": f"{type(e).__name__}: {str(e)[:300]}", **tags})
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
