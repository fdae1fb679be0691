"""Ground truth for `tilewise advise`: time every config of each kernel's space on the GPU.

    python benchmarks/sweeps/sweep.py --out DIR [--family gemm,attention,decode,grouped] [--shard i/n]
        [--budget SECONDS] [--workers 16] [--small]

* The spaces are `tilewise.advise.space` (exactly what the advisor may propose); GEMM rows also time
  cuBLAS (`torch.matmul`), the kernel's previous hand rule (`config=None`) and nvidia-matmul-heuristics'
  Triton top-1 mapped to our kernel (benchmarks/sweeps/nmh_gemm.json, made on the CPU by nmh_configs.py);
  the other families time their hand rule beside the space.
* Every config is first compiled in parallel worker processes that launch nothing (triton's warmup
  path: compile only, so the GPU stays idle for the timing process); the timing process then loads
  the binaries from triton's cache.
* Timing: per problem, each config is checked once against cuBLAS / the float32 reference, then
  captured as a CUDA graph of `calls` launches that rotate over `copies` sets of inputs (>= 150 MB
  in all where that takes <= 64 copies: the L2 holds 60 MB, so each launch reads cold operands),
  with `calls` large enough that a replay passes ~0.25 ms. All graphs of a problem are then replayed
  in alternating rounds (forward, backward, ...), one event-timed replay per config per round, each
  round behind a GPU-side wait so the host enqueues it ahead of the GPU; the row's `ms` is the
  median over rounds / calls.
* Rows go to DIR/<family>.jsonl as each problem finishes (a timeout loses only the problem in
  flight), with the calibration microbenchmarks (sustained clock under Tensor-Core load, copy and L2
  bandwidth, per-launch cost) in DIR/calib.json and the run's GPU, date, versions, host CPU and
  command in DIR/meta.json.
* `--shard i/n` takes every n-th problem of each family starting at i (merge the jsonl files after).
* `--small` (CPU, TRITON_INTERPRET=1): tiny problems and three configs each, to test the script.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import gc
import json
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))

import problems as P  # noqa: E402

from tilewise.advise import space as S  # noqa: E402
from tilewise.bench import harness, timing  # noqa: E402

L2_ROTATE_BYTES = 150 * 2**20
MAX_COPIES = 64
TARGET_REPLAY_S = 2.5e-4
MAX_CALLS = 128
SLEEP_CYCLES_PER_ENTRY = 300_000  # ~0.15 ms at the H200's ~2 GHz: a host-side lead per timed graph


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


# ------------------------------------------------------------------------------------ problems and configs


def small_problem(family: str, p: dict) -> dict:
    q = dict(p)
    if family == "gemm":
        q.update(m=min(p["m"], 33), n=min(p["n"], 40), k=min(p["k"], 48), dtype="fp16")
    elif family == "attention":
        q.update(batch=1, heads=2, kv_heads=1 if p["kv_heads"] < p["heads"] else 2, seq_q=40, seq_k=40,
                 head_dim=min(p["head_dim"], 64), dtype="fp16")  # fmt: skip
    elif family == "decode":
        q.update(batch=2, heads=4, kv_heads=2 if p["kv_heads"] < p["heads"] else 4, seq_len=100, head_dim=64,
                 dtype="fp16")  # fmt: skip
    elif family == "grouped":
        q.update(experts=3, rows_per_expert=min(p["rows_per_expert"], 9), n=40, k=48, dtype="fp16")
    return q


def configs_for(family: str, p: dict, nmh: dict, small: bool) -> list[tuple[str, dict | None]]:
    """[(source, config)]: the space, then the comparison points (config None = the hand rule / cuBLAS)."""
    if family == "gemm":
        cfgs = [("space", c) for c in S.gemm_space(p["m"], p["n"], p["k"], p["dtype"], layout=p["layout"])]
        # config None is the kernel's default, the advisor's top-1 since 2026-12-01: the committed gemm.jsonl of
        # a re-sweep relabels these rows "default" and keeps the hand rule's rows of the first sweep as "hand"
        # (tests/data/sweeps/h200/meta.json reruns.gemm.sources)
        extra = [("hand", None), ("cublas", None)]
        n = nmh.get(P.gemm_key(p))
        if n is not None:
            extra.append(("nmh", n["config"]))
    elif family == "gemm_gluon":
        # the Gluon kernel's space, timed the way the Triton kernel's was (its model is fitted in the same frame);
        # cuBLAS beside it ties this run to gemm.jsonl's, "default" is matmul's dispatch at the time
        cfgs = [("space", c) for c in S.gemm_gluon_space(p["m"], p["n"], p["k"], p["dtype"], layout=p["layout"])]
        extra = [("default", None), ("cublas", None)]
    elif family == "attention":
        cfgs = [("space", c) for c in S.attention_space(p["head_dim"], p["dtype"])]
        extra = [("hand", None), ("sdpa", None)]
    elif family == "decode":
        cfgs = [("space", c) for c in S.decode_space(p["batch"], p["kv_heads"], p["seq_len"], p["head_dim"])]
        extra = [("hand", None)]
    else:
        cfgs = [("space", c) for c in S.grouped_space(p["rows_per_expert"], p["n"], p["k"])]
        extra = [("hand", None)]
    if small:
        cfgs = cfgs[:: max(1, len(cfgs) // 3)][:3]
    return cfgs + extra


# ------------------------------------------------------------------------------------ inputs and calls


def _dt(torch, name):
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def footprint(family: str, p: dict) -> int:
    e = 4 if p["dtype"] == "fp32" else 2
    if family in ("gemm", "gemm_gluon"):
        return (p["m"] * p["k"] + p["k"] * p["n"] + p["m"] * p["n"]) * e
    if family == "attention":
        return (
            (2 * p["batch"] * p["heads"] * p["seq_q"] + 2 * p["batch"] * p["kv_heads"] * p["seq_k"]) * p["head_dim"] * e
        )
    if family == "decode":
        return 2 * p["batch"] * p["kv_heads"] * p["seq_len"] * p["head_dim"] * e
    rows = p["experts"] * p["rows_per_expert"]
    return (rows * p["k"] + p["experts"] * p["k"] * p["n"] + rows * p["n"]) * e


def estimate_s(family: str, p: dict) -> float:
    """A rough lower bound on one call (bytes at 4 TB/s, FLOPs at 700 TFLOP/s): sizes the graph."""
    if family in ("gemm", "gemm_gluon"):
        flops = 2 * p["m"] * p["n"] * p["k"]
    elif family == "attention":
        flops = 4 * p["batch"] * p["heads"] * p["seq_q"] * p["seq_k"] * p["head_dim"] // (2 if p["causal"] else 1)
    elif family == "grouped":
        flops = 2 * p["experts"] * p["rows_per_expert"] * p["n"] * p["k"]
    else:
        flops = 0
    return max(3e-6, footprint(family, p) / 4e12, flops / 7e14)


def make_inputs(torch, family: str, p: dict, device, copies: int, seed: int = 0):
    g = torch.Generator(device=device).manual_seed(seed)
    dt = _dt(torch, p["dtype"])

    def rnd(*shape):  # drawn on the device: 64 copies of a 2 MB problem in microseconds, not seconds on the CPU
        return torch.randn(*shape, generator=g, dtype=dt, device=device).mul_(0.5)

    sets = []
    for _ in range(copies):
        if family in ("gemm", "gemm_gluon"):
            a = rnd(p["m"], p["k"])
            b = rnd(p["n"], p["k"]).t() if p["layout"] == "nt" else rnd(p["k"], p["n"])
            c = torch.empty((p["m"], p["n"]), dtype=dt, device=device)
            sets.append((a, b, c))
        elif family == "attention":
            q = rnd(p["batch"], p["heads"], p["seq_q"], p["head_dim"])
            k = rnd(p["batch"], p["kv_heads"], p["seq_k"], p["head_dim"])
            v = rnd(p["batch"], p["kv_heads"], p["seq_k"], p["head_dim"])
            sets.append((q, k, v))
        elif family == "decode":
            q = rnd(p["batch"], p["heads"], p["head_dim"])
            k = rnd(p["batch"], p["kv_heads"], p["seq_len"], p["head_dim"])
            v = rnd(p["batch"], p["kv_heads"], p["seq_len"], p["head_dim"])
            lens = torch.full((p["batch"],), p["seq_len"], dtype=torch.int32, device=device)
            sets.append((q, k, v, lens))
        else:
            rows = p["experts"] * p["rows_per_expert"]
            x = rnd(rows, p["k"])
            w = rnd(p["experts"], p["k"], p["n"]).mul_(1.0 / max(1.0, p["k"] ** 0.5))
            offsets = torch.arange(1, p["experts"] + 1, dtype=torch.int32, device=device) * p["rows_per_expert"]
            y = torch.empty((rows, p["n"]), dtype=dt, device=device)
            sets.append((x, w, offsets, y))
    return sets


def make_call(torch, family: str, p: dict, source: str, cfg: dict | None):
    """fn(inputs) -> output tensor, for one config."""
    if family in ("gemm", "gemm_gluon"):
        from tilewise.kernels.gemm import Config, matmul
        from tilewise.kernels.gemm_gluon import config_from_dict

        if source == "cublas":
            return lambda s: torch.matmul(s[0], s[1], out=s[2])
        pin = config_from_dict if family == "gemm_gluon" else (lambda c: Config(**c))
        conf = None if cfg is None else pin(cfg)
        return lambda s: matmul(s[0], s[1], out=s[2], config=conf)
    if family == "attention":
        from tilewise.kernels.flash_attention import ForwardConfig, attention

        causal = bool(p["causal"])
        if source == "sdpa":
            gqa = p["kv_heads"] != p["heads"]
            return lambda s: torch.nn.functional.scaled_dot_product_attention(
                s[0], s[1], s[2], is_causal=causal, enable_gqa=gqa
            )
        conf = None if cfg is None else ForwardConfig(**cfg)
        return lambda s: attention(s[0], s[1], s[2], causal=causal, config=conf)[0]
    if family == "decode":
        from tilewise.kernels.decode import decode_attention

        L = p["seq_len"]
        if cfg is None:
            return lambda s: decode_attention(s[0], s[1], s[2], s[3], max_seq_len=L)[0]
        tile = (cfg["block_n"], cfg["num_warps"], cfg["num_stages"])
        ns = cfg["num_splits"]
        return lambda s: decode_attention(s[0], s[1], s[2], s[3], max_seq_len=L, num_splits=ns, tile=tile)[0]
    from tilewise.kernels.grouped_gemm import GroupedConfig, grouped_matmul

    conf = None if cfg is None else GroupedConfig(**cfg)
    return lambda s: grouped_matmul(s[0], s[1], s[2], out=s[3], config=conf, check_offsets=False)


def advisor_tag(family: str, p: dict) -> str | None:
    """The advisor's top-1 (the kernels' default since they take it from tilewise.advise) for the problem."""
    from tilewise.advise import default_config

    q = dict(p)
    if family == "grouped":
        q = {k: p[k] for k in ("experts", "rows_per_expert", "n", "k", "dtype")}
    try:
        return S.TAGS[family](default_config(family, q))
    except Exception:
        return None


def reference(torch, family: str, p: dict, s):
    if family in ("gemm", "gemm_gluon"):
        return (s[0].float() @ s[1].float()).to(s[0].dtype)
    if family == "attention":
        gqa = p["kv_heads"] != p["heads"]
        return torch.nn.functional.scaled_dot_product_attention(
            s[0], s[1], s[2], is_causal=bool(p["causal"]), enable_gqa=gqa
        )
    if family == "decode":
        q = s[0][:, :, None, :]
        o = torch.nn.functional.scaled_dot_product_attention(q, s[1], s[2], enable_gqa=True)
        return o[:, :, 0, :]
    x, w = s[0], s[1]
    r = p["rows_per_expert"]
    return torch.cat([x[e * r : (e + 1) * r].float() @ w[e].float() for e in range(p["experts"])]).to(x.dtype)


def rel_err(torch, out, ref) -> float:
    d = (out.float() - ref.float()).abs().max().item()
    return d / max(ref.float().abs().max().item(), 1e-6)


# ------------------------------------------------------------------------------------ precompile workers


def _worker_init():
    os.environ.setdefault("TILEWISE_SWEEP_WORKER", "1")
    from triton.runtime import jit

    # compile, never launch: the timing process has the GPU to itself
    def getitem(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=True, **kwargs)

    jit.KernelInterface.__getitem__ = getitem


def _worker_task(family: str, p: dict, items: list[tuple[str, dict | None]]) -> dict:
    import torch

    out = {}
    try:
        sets = make_inputs_empty(torch, family, p)
    except Exception as e:
        return {"error": repr(e)[:200]}
    for source, cfg in items:
        if source in ("cublas", "sdpa"):
            continue
        t = time.time()
        try:
            make_call(torch, family, p, source, cfg)(sets)
            out[_tag(family, source, cfg)] = round(time.time() - t, 3)
        except Exception as e:
            out[_tag(family, source, cfg)] = "error: " + repr(e)[:160]
    del sets
    torch.cuda.empty_cache()  # the caching allocator would keep every worker's inputs reserved
    return out


def make_inputs_empty(torch, family: str, p: dict):
    """Inputs of the right shapes, strides and alignment, uninitialised (no kernel launch)."""
    dt = _dt(torch, p["dtype"])
    d = "cuda"
    if family in ("gemm", "gemm_gluon"):
        a = torch.empty(p["m"], p["k"], dtype=dt, device=d)
        b = (
            torch.empty(p["n"], p["k"], dtype=dt, device=d).t()
            if p["layout"] == "nt"
            else torch.empty(p["k"], p["n"], dtype=dt, device=d)
        )
        return (a, b, torch.empty(p["m"], p["n"], dtype=dt, device=d))
    if family == "attention":
        return (
            torch.empty(p["batch"], p["heads"], p["seq_q"], p["head_dim"], dtype=dt, device=d),
            torch.empty(p["batch"], p["kv_heads"], p["seq_k"], p["head_dim"], dtype=dt, device=d),
            torch.empty(p["batch"], p["kv_heads"], p["seq_k"], p["head_dim"], dtype=dt, device=d),
        )
    if family == "decode":
        return (
            torch.empty(p["batch"], p["heads"], p["head_dim"], dtype=dt, device=d),
            torch.empty(p["batch"], p["kv_heads"], p["seq_len"], p["head_dim"], dtype=dt, device=d),
            torch.empty(p["batch"], p["kv_heads"], p["seq_len"], p["head_dim"], dtype=dt, device=d),
            torch.empty(p["batch"], dtype=torch.int32, device=d),
        )
    rows = p["experts"] * p["rows_per_expert"]
    return (
        torch.empty(rows, p["k"], dtype=dt, device=d),
        torch.empty(p["experts"], p["k"], p["n"], dtype=dt, device=d),
        torch.empty(p["experts"], dtype=torch.int32, device=d),
        torch.empty(rows, p["n"], dtype=dt, device=d),
    )


def _tag(family: str, source: str, cfg: dict | None) -> str:
    if cfg is None:
        return source
    t = S.TAGS[family](cfg)
    return t if source == "space" else f"{source}:{t}"


# ------------------------------------------------------------------------------------ timing


def time_problem(torch, family: str, p: dict, items, rounds: int, log) -> list[dict]:
    cuda = torch.cuda.is_available() and not interpreting()
    device = "cuda" if cuda else "cpu"
    fp = footprint(family, p)
    copies = 1 if not cuda else max(1, min(MAX_COPIES, -(-L2_ROTATE_BYTES // max(fp, 1))))
    sets = make_inputs(torch, family, p, device, copies)
    ref = reference(torch, family, p, sets[0])
    tol = 3e-2
    entries = []
    rows = []
    for source, cfg in items:
        tag = _tag(family, source, cfg)
        row = {"family": family, "problem": p, "source": source, "config": cfg, "tag": tag}
        if source == "hand" and family in ("gemm", "decode", "grouped"):
            row["advisor_tag"] = advisor_tag(family, p)  # what the kernel's default now is
        fn = make_call(torch, family, p, source, cfg)
        try:
            out = fn(sets[0])
            row["err"] = rel_err(torch, out, ref)
            if not row["err"] <= tol:
                row["error"] = f"wrong result: relative error {row['err']:.3g}"
                rows.append(row)
                continue
        except Exception as e:
            row["error"] = repr(e)[:240]
            rows.append(row)
            continue
        if not cuda:
            t = time.perf_counter()
            fn(sets[0])
            row["ms"] = (time.perf_counter() - t) * 1e3
            row["calls"] = 1
            rows.append(row)
            continue
        calls = max(copies, min(MAX_CALLS, int(-(-TARGET_REPLAY_S // estimate_s(family, p)))))
        try:
            g = timing.capture(lambda i, fn=fn: fn(sets[i % copies]), calls, warmup=1)
            g.replay()
        except Exception as e:
            row["error"] = "graph: " + repr(e)[:200]
            rows.append(row)
            continue
        row["calls"], row["copies"] = calls, copies
        entries.append((row, g, []))
        rows.append(row)
    torch.cuda.synchronize() if cuda else None
    if cuda and entries:
        # A GPU-side wait before each round, so the host enqueues the round's events and replays ahead of the
        # GPU: a host thread descheduled between an event and its replay (the compile workers load every core)
        # would otherwise time the gap too. The GEMM re-sweep of 2026-12-01 without it: 679 of 9175 rows had
        # rounds more than 1.3x apart, all in the 80 problems timed while compiles ran. Round 0 warms every graph.
        timed = timing.time_calls(
            {str(i): g for i, (_row, g, _ts) in enumerate(entries)},
            rounds=rounds,
            flush=False,
            gpu_wait_cycles=int(SLEEP_CYCLES_PER_ENTRY * len(entries)),
        )
        for i, (row, _g, _ts) in enumerate(entries):
            t = timed[str(i)]
            row["ms"] = t.median_ms
            row["ms_rounds"] = [round(x, 6) for x in t.samples_ms]
        del entries
    return rows


# ------------------------------------------------------------------------------------ calibration


def calibrate(torch, out_dir: str, log) -> dict:
    """Microbenchmarks whose figures the model cannot take from the registry."""
    res: dict = {}
    dev = "cuda"

    def graph_ms(fn, calls, reps=5):  # median ms per call over `reps` replays of a graph of `calls` calls
        return timing.graph_ms(fn, calls=calls, rounds=reps, flush=False).median_ms

    # per-launch cost: a graph of 1-element adds (the launch floor every kernel pays in a graph)
    x = torch.zeros(1, device=dev)
    res["launch_us"] = graph_ms(lambda: x.add_(1), 500) * 1e3
    # copy (HBM read + write) and read bandwidth at 2 GiB, L2 bandwidth at 16 MiB
    big = torch.empty(2**30, dtype=torch.bfloat16, device=dev).normal_()
    dst = torch.empty_like(big)
    ms = graph_ms(lambda: dst.copy_(big), 10)
    res["copy_tbps"] = 2 * big.numel() * 2 / ms / 1e9
    ms = graph_ms(lambda: torch.sum(big), 3)
    res["read_tbps"] = big.numel() * 2 / ms / 1e9
    small = big[: 8 * 2**20]
    sdst = dst[: 8 * 2**20]
    ms = graph_ms(lambda: sdst.copy_(small), 200)
    res["l2_copy_tbps"] = 2 * small.numel() * 2 / ms / 1e9
    big = dst = small = sdst = None
    # sustained clock and Tensor-Core rate under load: 8192^3 bf16 cuBLAS for ~2 s, clocks sampled
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    c = torch.empty_like(a)
    clocks = []
    ms = graph_ms(lambda: torch.matmul(a, b, out=c), 10, reps=1)
    g = timing.capture(lambda _i: torch.matmul(a, b, out=c), 20)
    t_end = time.time() + 2.0
    ts = []
    while time.time() < t_end:
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        try:
            q = subprocess.run(
                ["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu",
                 "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5,
            ).stdout.strip()  # fmt: skip
            clocks.append(q)
        except Exception as e:
            clocks.append(repr(e)[:80])
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) / 20)
    res["cublas_8192_ms"] = statistics.median(ts)
    res["cublas_8192_tflops"] = 2 * 8192**3 / (res["cublas_8192_ms"] * 1e-3) / 1e12
    res["clock_samples"] = clocks
    try:
        mhz = [float(s.split(",")[0]) for s in clocks if s and s[0].isdigit()]
        res["sustained_clock_mhz"] = statistics.median(mhz)
    except Exception:
        pass
    log(f"calibration: {json.dumps({k: v for k, v in res.items() if k != 'clock_samples'})}")
    return res


# ------------------------------------------------------------------------------------ main


def env_tags(torch) -> dict:
    import triton

    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except Exception:
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu (TRITON_INTERPRET)"
    return {
        "gpu": gpu,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "host_cpu": cpu,
        "cpus": os.cpu_count(),
        "command": " ".join(sys.argv),
        **harness.source_state(),  # version, commit, dirty
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--family", default="gemm,decode,grouped,attention")
    ap.add_argument("--shard", default="0/1")
    ap.add_argument("--budget", type=float, default=1e9, help="stop starting new problems after this many seconds")
    ap.add_argument("--workers", type=int, default=14)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--limit", type=int, default=0, help="at most this many problems per family (0: all)")
    ap.add_argument("--keys", default="", help="only these problem keys: a comma list, or @FILE with one a line")
    ap.add_argument("--no-calibrate", action="store_true")
    ap.add_argument(
        "--set",
        default="sweep",
        choices=("sweep", "fresh"),
        help="fresh: problems.fresh_problems (random, seeded) instead of the sweep's list",
    )
    ap.add_argument("--sources", default="", help="time only these sources (space,hand,cublas,nmh,sdpa); default all")
    ap.add_argument(
        "--tags",
        default="",
        help="time only the space configs of these tags (a comma list; each family's "
        "own spelling, advise.space.TAGS); the other sources all",
    )
    ap.add_argument(
        "--rows-file", default="", help="every family's rows into this one file (default DIR/<family>.jsonl)"
    )
    ap.add_argument("--aux", default="", help="where log.txt and compile.jsonl go (default DIR)")
    a = ap.parse_args(argv)
    t0 = time.time()
    os.makedirs(a.out, exist_ok=True)
    aux = a.aux or a.out
    os.makedirs(aux, exist_ok=True)
    logf = open(os.path.join(aux, "log.txt"), "a")

    def log(msg):
        line = f"[{time.time() - t0:7.1f}s] {msg}"
        print(line, flush=True)
        logf.write(line + "\n")
        logf.flush()

    i, n = (int(x) for x in a.shard.split("/"))
    fams = [f for f in a.family.split(",") if f]
    with open(os.path.join(HERE, "nmh_gemm.json")) as f:
        nmh = json.load(f)["configs"]
    per_fam = []
    for fam in fams:
        probs, keyf = P.FAMILIES[fam]
        plist = (P.fresh_problems(fam) if a.set == "fresh" else probs())[i::n]
        if a.keys:
            wanted = open(a.keys[1:]).read().split() if a.keys.startswith("@") else a.keys.split(",")
            plist = [p for p in plist if keyf(p) in set(wanted)]
        if a.limit:
            plist = plist[: a.limit]
        items = []
        for p in plist:
            q = small_problem(fam, p) if a.small else p
            cfgs = configs_for(fam, q, nmh, a.small)
            if a.sources:
                cfgs = [x for x in cfgs if x[0] in a.sources.split(",")]
            if a.tags:
                tags = set(a.tags.split(","))
                cfgs = [x for x in cfgs if x[0] != "space" or S.TAGS[fam](x[1]) in tags]
            items.append((fam, keyf(p), q, cfgs))
        per_fam.append(items)
    # interleave the families in proportion, so a run cut short still covers every one of them
    work = []
    pos = [0.0] * len(per_fam)
    while any(pos[j] < len(per_fam[j]) for j in range(len(per_fam))):
        j = min((j for j in range(len(per_fam)) if pos[j] < len(per_fam[j])),
                key=lambda j: (pos[j] + 1) / len(per_fam[j]))  # fmt: skip
        work.append(per_fam[j][int(pos[j])])
        pos[j] += 1
    log(f"{len(work)} problems, {sum(len(w[3]) for w in work)} configs")

    import torch

    cuda = torch.cuda.is_available() and not interpreting()
    meta = env_tags(torch)
    meta.update(set=a.set, seed=P.FRESH_SEED if a.set == "fresh" else None, shard=a.shard, families=fams, rounds=a.rounds, l2_rotate_bytes=L2_ROTATE_BYTES,
                target_replay_s=TARGET_REPLAY_S)  # fmt: skip
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)

    futures = {}
    pool = None
    if cuda and a.workers > 0:
        ctx = mp.get_context("spawn")
        pool = cf.ProcessPoolExecutor(max_workers=a.workers, mp_context=ctx, initializer=_worker_init)
        for fam, key, q, items in work:  # small chunks: one problem's configs compile on every worker at once
            futures[key] = [pool.submit(_worker_task, fam, q, items[j : j + 4]) for j in range(0, len(items), 4)]
    if cuda and not a.no_calibrate:
        try:  # while the workers compile: the microbenchmarks launch only torch kernels
            cal = calibrate(torch, a.out, log)
            cal.update(meta)
            with open(os.path.join(a.out, "calib.json"), "w") as f:
                json.dump(cal, f, indent=1)
        except Exception as e:
            log(f"calibration failed: {e!r}")
    if a.rows_file:
        one = open(a.rows_file, "a")
        outs = {fam: one for fam in fams}
    else:
        outs = {fam: open(os.path.join(a.out, f"{fam}.jsonl"), "a") for fam in fams}
    compile_log = open(os.path.join(aux, "compile.jsonl"), "a")
    for fam, key, q, items in work:
        if time.time() - t0 > a.budget:
            log(f"budget reached: stopping before {fam} {key}")
            break
        comp = None
        if key in futures:
            comp = {}
            for fut in futures[key]:
                try:
                    comp.update(fut.result(timeout=max(1.0, a.budget - (time.time() - t0))))
                except Exception as e:
                    comp["error"] = repr(e)[:200]
            compile_log.write(json.dumps({"family": fam, "key": key, "compile_s": comp}) + "\n")
            compile_log.flush()
        t = time.time()
        try:
            rows = time_problem(torch, fam, q, items, a.rounds, log)
        except Exception as e:
            log(f"{fam} {key}: {e!r}")
            rows = [{"family": fam, "problem": q, "error": repr(e)[:240]}]
        split = P.split_of(key)
        for r in rows:
            r["key"], r["split"] = key, split
            outs[fam].write(json.dumps(r) + "\n")
        outs[fam].flush()
        ok = [r for r in rows if "ms" in r and r.get("source") == "space"]
        best = min(ok, key=lambda r: r["ms"]) if ok else None
        log(
            f"{fam} {key}: {len(ok)}/{len(rows)} timed in {time.time() - t:.1f}s"
            + (f", best {best['tag']} {best['ms'] * 1e3:.1f} us" if best else "")
        )
        if cuda:
            gc.collect()
            torch.cuda.empty_cache()
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
