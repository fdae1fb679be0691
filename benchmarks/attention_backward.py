"""Training attention on the GPU: tilewise's flash backward beside cuDNN SDPA and SDPA's flash backend.

    python3 benchmarks/attention_backward.py --out $OUT --precompile 15   # memory, sweep
    python3 benchmarks/attention_backward.py --out $OUT --quick             # two problems, for a smoke run
    python3 benchmarks/attention_backward.py --out $OUT --sections sweep --dq atomic   # the sweep, atomic dQ

The tiles are the shipped ones (`tilewise.model.attention_backward.SHIPPED`, chosen by
benchmarks/attention_backward_tune.py). `--precompile N` first compiles every kernel the sweep launches in N
processes (Triton's disk cache then serves this one). Sections (rows go to one JSON file, attention_backward.json):
* sweep: the attention suite's problems (tilewise.bench.suites.attention.SWEEP: D 64/128/256, S 512-32k, causal
  and not, MHA and GQA); per problem the backward alone and forward + backward, ours against cuDNN SDPA and
  against SDPA's flash backend (the cuDNN pairs of every problem first, so a run cut short keeps them), each pair
  alternating in one process (tilewise.bench.harness.time_pair, eager
  and CUDA graphs, `speedup_graph` = peer / ours of the graph replays);
* memory: peak memory the backward allocates beyond its inputs against S (B1 H16 D128, bf16, S 1k-32k): ours,
  cuDNN's, and the torch formula this kernel replaced (materialises P [B, H, S, S] fp32; measured to S 8k,
  past that scaled by (S / 8k)^2 from the 8k row and marked `analytic`).
GQA peers: SDPA with enable_gqa=True where the backend takes it, else K/V repeated to H heads before the
timed region (marked `peer_gqa`: "repeat_kv").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import traceback

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import tilewise.kernels as K
from tilewise.bench import harness
from tilewise.bench.shapes import attention_name
from tilewise.bench.suites.attention import SWEEP
from tilewise.kernels import attention_backward as ab
from tilewise.kernels import flash_attention as fa
from tilewise.model import attention_backward as model
from tilewise.model import traffic

DEV = "cuda"
REPRODUCE = (
    "TESTS=0 bash benchmarks/attention_backward_device.sh --rounds 2 --rep-ms 10 --precompile 15 # "
    "benchmarks/attention_backward.py writes its rows under $OUT; committed as benchmarks/results/h200/attention_backward.json"
)
PEERS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def name(b, h, hk, s, d, causal):
    return attention_name(b, h, hk, s, d, causal)


def inputs(b, h, hk, s, d, dtype=torch.bfloat16):
    """Seeded inputs, every one drawn from a generator of this call: a CUDA-graph capture that fails midway (cuDNN's
    backward did, once per process, on the H200 with torch 2.11) leaves torch's default CUDA generator unusable for
    the rest of the process."""
    g = torch.Generator(device=DEV).manual_seed(0)
    q = torch.randn(b, h, s, d, device=DEV, dtype=dtype, generator=g)
    k = torch.randn(b, hk, s, d, device=DEV, dtype=dtype, generator=g)
    v = torch.randn(b, hk, s, d, device=DEV, dtype=dtype, generator=g)
    return q, k, v, torch.randn(b, h, s, d, device=DEV, dtype=dtype, generator=g)


def sdpa(backend, q, k, v, causal):
    """SDPA forced onto one backend; GQA through enable_gqa, else K/V repeated inside the graph (so their
    gradients are summed back over the group, as a user's model would); returns (out, how)."""
    with sdpa_kernel(backend):
        if k.shape[1] == q.shape[1]:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal), "mha"
        try:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True), "enable_gqa"
        except RuntimeError:
            g = q.shape[1] // k.shape[1]
            kr, vr = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
            return F.scaled_dot_product_attention(q, kr, vr, is_causal=causal), "repeat_kv"


def ours_backward(q, k, v, d_out, causal, cfg):
    out, lse = fa.attention(q, k, v, causal=causal)
    return lambda i: ab.attention_backward(d_out, q, k, v, out, lse, causal=causal, config=cfg)


def ours_train(q, k, v, d_out, causal):
    """The training path a model takes: the custom op's forward and its registered backward."""
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))

    def run(i):
        out, _ = K.attention(qg, kg, vg, causal=causal)
        return torch.autograd.grad(out, (qg, kg, vg), d_out)

    return run


def peer_backward(backend, q, k, v, d_out, causal):
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
    out, how = sdpa(backend, qg, kg, vg, causal)
    return (lambda i: torch.autograd.grad(out, (qg, kg, vg), d_out, retain_graph=True)), how


def peer_train(backend, q, k, v, d_out, causal):
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))

    def run(i):
        out, _ = sdpa(backend, qg, kg, vg, causal)
        return torch.autograd.grad(out, (qg, kg, vg), d_out)

    return run


def timing(ours, peer, args):
    return harness.time_pair(ours, peer, rounds=args.rounds, warmup_ms=5, rep_ms=args.rep_ms)


def precompile_job(job):
    """Worker: launch one sweep problem's forward, or its backward on stand-in out / lse (compiles their kernels:
    Triton's disk cache then serves the timing process)."""
    p, what, dq = job
    t0 = time.time()
    try:
        model.DQ_MODE = dq
        b, h, hk, s, d, causal = p
        q, k, v, d_out = inputs(b, h, hk, s, d)
        if what == "forward":
            fa.attention(q, k, v, causal=causal)
        else:
            lse = torch.zeros(b, h, s, device=DEV, dtype=torch.float32)
            ab.attention_backward(d_out, q, k, v, d_out, lse, causal=causal, config=ab.backward_config(d, q.dtype))
        torch.cuda.synchronize()
        return f"{name(*p)} {what}: {time.time() - t0:.1f}s"
    except Exception as e:
        return f"{name(*p)} {what}: {type(e).__name__}: {str(e)[:200]}"


def precompile(problems, dq, workers):
    import multiprocessing as mp

    t0 = time.time()
    jobs = [(p, what, dq) for what in ("backward", "forward") for p in problems]  # the longer compiles first
    with mp.get_context("spawn").Pool(workers) as pool:
        done = pool.map(precompile_job, jobs, chunksize=1)
    print(f"precompiled in {time.time() - t0:.0f}s: {done}", flush=True)


def sweep(args, tags, rows, flush=lambda: None):
    problems = SWEEP[:2] if args.quick else SWEEP
    for peer, what in (("cudnn", "backward"), ("cudnn", "forward+backward"), ("flash", "backward"),
                       ("flash", "forward+backward")):  # fmt: skip
        for p in problems:
            sweep_row(args, tags, rows, p, peer, what)
            torch.cuda.empty_cache()
            flush()  # rows so far reach the file even if the call's time runs out


def sweep_row(args, tags, rows, p, peer, what):
    b, h, hk, s, d, causal = p
    cfg = ab.backward_config(d, torch.bfloat16)
    q, k, v, d_out = inputs(b, h, hk, s, d)
    bwd = model.useful_flops(b, h, s, s, d, causal)
    nbytes = model.hbm_bytes(b, h, hk, s, s, d, "bf16", cfg.dq)
    flops, nb = bwd, nbytes
    if what != "backward":
        flops += traffic.attention_flops(b, h, s, s, d, causal)
        nb += traffic.attention_bytes(b, h, hk, s, s, d, "bf16")
    try:
        if what == "backward":
            ours = ours_backward(q, k, v, d_out, causal, cfg)
            theirs, how = peer_backward(PEERS[peer], q, k, v, d_out, causal)
        else:
            ours = ours_train(q, k, v, d_out, causal)
            theirs = peer_train(PEERS[peer], q, k, v, d_out, causal)
            how = sdpa(PEERS[peer], q[:, :, :16], k[:, :, :16], v[:, :, :16], causal)[1]  # how the peer takes GQA
        t = timing(ours, theirs, args)
    except Exception as e:
        rows.append({"section": "sweep", "shape": name(*p), "what": what, "peer": f"sdpa-{peer}",
                     "error": f"{type(e).__name__}: {str(e)[:300]}", **tags})  # fmt: skip
        print(rows[-1], flush=True)
        return
    extra = {"section": "sweep", "what": what, "tile": [cfg.block_m, cfg.block_n, cfg.num_warps, cfg.num_stages],
             "dq_tile": [cfg.dq_block_m, cfg.dq_block_n, cfg.dq_warps, cfg.dq_stages], "dq": cfg.dq,
             "peer_gqa": how, "commit": os.environ.get("TILEWISE_COMMIT", "unknown"), **harness.timing_fields(t)}  # fmt: skip
    row = harness.make_row(
        kernel="attention_backward" if what == "backward" else "attention_train", shape=name(*p),
        dtype="bf16", peer=f"sdpa-{peer}", ours_ms=t["ours_ms"], peer_ms=t.get("peer_ms"), flops=flops,
        nbytes=nb, tags=tags, extra=extra,
    )  # fmt: skip
    rows.append(row)
    print({k: row.get(k) for k in ("shape", "what", "peer", "ours_graph_ms", "peer_graph_ms", "speedup_graph",
                                    "speedup")}, flush=True)  # fmt: skip


def torch_path_backward(q, k, v, out, lse, d_out):
    """The torch formula the kernel replaced (FlashAttention's equations with P [B, H, Sq, Sk] in fp32)."""
    H, D = q.shape[1], q.shape[3]
    g = H // k.shape[1]
    scale = 1.0 / math.sqrt(D)
    qf, kf, vf = q.float(), k.float().repeat_interleave(g, 1), v.float().repeat_interleave(g, 1)
    p = torch.exp((qf @ kf.transpose(-1, -2)) * scale - lse[..., None])
    do = d_out.float()
    dv = p.transpose(-1, -2) @ do
    ds = p * (do @ vf.transpose(-1, -2) - (do * out.float()).sum(-1, keepdim=True))
    return ((ds @ kf) * scale).to(q.dtype), ((ds.transpose(-1, -2) @ qf) * scale).to(q.dtype), dv.to(q.dtype)


def peak_extra(fn):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    res = fn()
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - before
    del res
    return extra


def memory_row(b, h, s, d, tags, torch_8k):
    q, k, v, d_out = inputs(b, h, h, s, d)
    out, lse = fa.attention(q, k, v)
    row = {"section": "memory", "shape": name(b, h, h, s, d, False), "seq": s, **tags,
           "commit": os.environ.get("TILEWISE_COMMIT", "unknown"), "input_bytes": 4 * q.numel() * 2}  # fmt: skip
    row["ours_bytes"] = peak_extra(lambda: ab.attention_backward(d_out, q, k, v, out, lse))
    row["ours_deterministic_bytes"] = peak_extra(
        lambda: ab.attention_backward(d_out, q, k, v, out, lse, deterministic=True)
    )
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
    po, _ = sdpa(SDPBackend.CUDNN_ATTENTION, qg, kg, vg, False)
    row["cudnn_bytes"] = peak_extra(lambda: torch.autograd.grad(po, (qg, kg, vg), d_out))
    if s <= 8192:
        row["torch_path_bytes"] = peak_extra(lambda: torch_path_backward(q, k, v, out, lse, d_out))
        row["torch_path_analytic"] = False
    elif torch_8k is not None:
        row["torch_path_bytes"] = int(torch_8k * (s / 8192) ** 2)
        row["torch_path_analytic"] = True
    row["ours_over_cudnn"] = row["ours_bytes"] / row["cudnn_bytes"] if row["cudnn_bytes"] else None
    return row


def memory(args, tags, rows):
    torch_8k = None
    for s in (1024, 2048, 4096, 8192, 16384, 32768):
        row = memory_row(1, 16, s, 128, tags, torch_8k)
        torch_8k = row.get("torch_path_bytes") if s == 8192 else torch_8k
        rows.append(row)
        print(row, flush=True)
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=20)
    ap.add_argument("--sections", default="memory,sweep", help="memory first: the shorter section")
    ap.add_argument("--dq", default=model.DQ_MODE, choices=list(model.GEMMS), help="the dQ mode (default: shipped)")
    ap.add_argument("--precompile", type=int, default=0, help="compile the sweep's kernels in N processes first")
    args = ap.parse_args()
    model.DQ_MODE = args.dq  # the mode the backward and the autograd path launch, for this run
    harness.set_cuda_graph(True)
    tags = harness.env_tags()
    rows: list[dict] = []
    path = os.path.join(args.out, "attention_backward.json")
    t0 = time.time()
    tiles = {str(d): model.shipped_config(d, dq=args.dq) for d in (64, 128, 256)}
    if args.precompile:  # the memory section's problems launch the kernels of the sweep's D128 non-causal rows
        precompile(SWEEP[:2] if args.quick else SWEEP, model.DQ_MODE, args.precompile)
    for section in args.sections.split(","):
        try:
            if section == "sweep":
                sweep(args, tags, rows, lambda: harness.write_rows(path, rows, meta={**tags, "partial": True}))
            elif section == "memory":
                memory(args, tags, rows)
        except Exception:
            rows.append({"section": section, "error": traceback.format_exc()[-1500:], **tags})
            print(rows[-1]["error"], flush=True)
        meta = {**tags, "commit": os.environ.get("TILEWISE_COMMIT", "unknown"), "reproduce": REPRODUCE, "tiles": tiles, "elapsed_s": round(time.time() - t0, 1)}  # fmt: skip
        harness.write_rows(path, rows, meta=meta)
        print(f"{section} done at +{time.time() - t0:.0f}s", flush=True)
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
