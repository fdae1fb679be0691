"""Every config of kernels tilewise did not write, timed on the GPU: the ground truth for the pruner.

    python benchmarks/autotune_external.py --out DIR [--kernels flaggems_mm,liger_dyt,inductor_mm]
        [--workers 14] [--budget SECONDS]
    python benchmarks/autotune_report.py DIR     # on the CPU: picks, calibration, autotune_external.json

Kernels, each with its own config list, from PyPI wheels:
* flaggems_mm: FlagGems' `mm_kernel_general` (flag-gems, ops/mm.py) over the configs its NVIDIA
  Hopper tune file gives `mm` (runtime.get_tuned_config("mm")), GROUP_M 8 as its launcher passes;
* liger_dyt: Liger-Kernel's dynamic-tanh forward `_dyt_fwd_kernel` (liger-kernel, ops/dyt.py) over
  its own `triton.autotune` list (BLOCK_N x stages x warps), a memory-bound row kernel;
* inductor_mm: the GEMM configs Torch Inductor's max-autotune considers for a CUDA mm
  (`CUDAConfigHeuristic().mm_configs`) applied to examples/autotune/matmul.py's tutorial kernel.

Per kernel and shape: every config compiled first in parallel worker processes (cold cache, the
compile seconds recorded per config), then each config checked once against a float64 reference and
timed as a CUDA graph of launches rotating over input copies (>= 150 MB where that takes <= 16
copies, so operands come from HBM), the graphs replayed in alternating rounds; `ms` is the median.
The autotuner's own timing cost per config (triton.testing.do_bench at autotune's defaults) is
measured on two shapes per kernel. Rows go to DIR/external.jsonl, the run's GPU, versions, host
CPU and command to DIR/external_meta.json.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import math
import multiprocessing as mp
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(ROOT, "src"))
sys.path.insert(0, os.path.join(ROOT, "examples", "autotune"))
sys.path.insert(0, os.path.join(HERE, "sweeps"))

from tilewise.bench import timing  # noqa: E402  (the one CUDA-graph timer)

SEED = 20261201
L2_ROTATE_BYTES = 150 * 2**20
MAX_COPIES = 16
TARGET_REPLAY_S = 2.5e-4
MAX_CALLS = 64


# ------------------------------------------------------------------------------------ shapes


def gemm_shapes(seed: int, n: int, lo: int = 16, hi: int = 16384) -> list[dict]:
    """M, N, K log-uniform in [lo, hi], multiples of 16 (one compiled specialization per config), fp16."""
    r = random.Random(seed)
    out: list[dict] = []
    while len(out) < n:
        m, nn, k = (max(16, round(math.exp(r.uniform(math.log(lo), math.log(hi))) / 16) * 16) for _ in range(3))
        if 2 * m * nn * k > 4e12:  # <= ~6 ms a call at 700 TFLOP/s: the sweep's wall-clock budget
            continue
        out.append({"m": m, "n": nn, "k": k, "dtype": "fp16", "layout": "nn"})
    return out


def dyt_shapes(seed: int) -> list[dict]:
    """(rows, cols): six widths (N is a constexpr of the kernel: one compile per width and config) x rows."""
    r = random.Random(seed)
    widths = [1000, 2048, 3000, 4096, 7168, 11008, 16384]
    out = []
    for w in widths:
        for _ in range(6):
            rows = round(math.exp(r.uniform(math.log(8), math.log(32768))))
            out.append({"rows": rows, "cols": w, "dtype": "bf16"})
    return out


# ------------------------------------------------------------------------------------ kernels


def unwrap_jit(fn):
    import triton

    seen = 0
    while not isinstance(fn, triton.runtime.jit.JITFunction) and seen < 8:
        fn = getattr(fn, "fn", None)
        seen += 1
    if not isinstance(fn, triton.runtime.jit.JITFunction):
        raise RuntimeError("no JITFunction inside the wrapper")
    return fn


class Spec:
    """One external kernel: its jit function, configs, description, shapes, inputs and launch."""

    def __init__(self, name: str):
        self.name = name
        import triton

        from tilewise.advise.kernel import describe

        if name == "flaggems_mm":
            import importlib

            import autotune_targets
            import flag_gems
            from flag_gems import runtime

            # the module, not `flag_gems.ops.mm`: the package re-exports its `mm` function under that name
            fg = importlib.import_module("flag_gems.ops.mm")

            self.source = f"flag-gems {getattr(flag_gems, '__version__', '5.0.2')}"
            self.jit = unwrap_jit(fg.mm_kernel_general)
            self.configs = list(runtime.get_tuned_config("mm"))
            self.desc = autotune_targets.FLAGGEMS_DESC
            self.shapes = gemm_shapes(SEED + 1, 36)
        elif name == "liger_dyt":
            import importlib.metadata as md

            from liger_kernel.ops import dyt

            self.source = f"liger-kernel {md.version('liger-kernel')}"
            self.jit = unwrap_jit(dyt._dyt_fwd_kernel)
            self.configs = list(dyt._dyt_fwd_kernel.configs)
            self.desc = describe(
                "stream",
                name="liger_kernel.dyt_fwd",
                meta={"BLOCK_N": "block_n"},
                args={},
                dtype_from="X",
                bytes_per_program=dyt_bytes,
                programs=dyt_programs,
                elements_per_program=lambda a, k: k["BLOCK_N"],
            )
            self.shapes = dyt_shapes(SEED + 2)
        elif name == "inductor_mm":
            import matmul as ex
            import torch
            from torch._inductor.template_heuristics.triton import CUDAConfigHeuristic

            self.source = f"torch {torch.__version__} (inductor CUDAConfigHeuristic.mm_configs)"
            self.jit = ex.matmul_kernel
            seen, cfgs = set(), []
            for g in CUDAConfigHeuristic().mm_configs:
                key = (g.block_m, g.block_n, g.block_k, g.num_stages, g.num_warps, getattr(g, "group_m", 8))
                if key in seen:
                    continue
                seen.add(key)
                cfgs.append(
                    triton.Config(
                        {
                            "BLOCK_SIZE_M": key[0],
                            "BLOCK_SIZE_N": key[1],
                            "BLOCK_SIZE_K": key[2],
                            "GROUP_SIZE_M": key[5],
                        },
                        num_stages=key[3],
                        num_warps=key[4],
                    )
                )
            self.configs = cfgs
            self.desc = ex.DESC
            self.shapes = gemm_shapes(SEED + 3, 36)
        else:
            raise SystemExit(f"unknown kernel {name}")

    # inputs ------------------------------------------------------------------
    def footprint(self, s: dict) -> int:
        if "rows" in s:
            return 2 * s["rows"] * s["cols"] * 2
        return (s["m"] * s["k"] + s["k"] * s["n"] + s["m"] * s["n"]) * 2

    def inputs(self, torch, s: dict, copies: int, empty: bool = False):
        dt = torch.float16 if s["dtype"] == "fp16" else torch.bfloat16
        mk = (lambda *sh: torch.empty(*sh, dtype=dt, device="cuda")) if empty else (
            lambda *sh: torch.randn(*sh, dtype=dt, device="cuda").mul_(0.5))  # fmt: skip
        sets = []
        for _ in range(copies):
            if "rows" in s:
                x = mk(s["rows"], s["cols"])
                sets.append((x, torch.empty_like(x), torch.tensor([0.7], device="cuda", dtype=torch.float32),
                             mk(s["cols"]), mk(s["cols"])))  # fmt: skip
            else:
                a, b = mk(s["m"], s["k"]), mk(s["k"], s["n"])
                sets.append((a, b, torch.empty((s["m"], s["n"]), dtype=dt, device="cuda")))
        return sets

    def named(self, s: dict, t) -> dict:
        """The kernel's named arguments for the model (what triton's autotuner hands the pruner)."""
        if "rows" in s:
            x = t[0]
            return {"X": x, "Y": t[1], "Alpha": t[2], "Gamma": t[3], "Beta": t[4], "HAVE_BETA": True, "N": s["cols"],
                    "M_rows": s["rows"]}  # fmt: skip
        a, b, c = t
        if self.name == "flaggems_mm":
            return {"A": a, "B": b, "C": c, "M": s["m"], "N": s["n"], "K": s["k"]}
        return {"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": s["m"], "N": s["n"], "K": s["k"]}

    def launch(self, s: dict, t, cfg, warmup: bool = False):
        import triton

        kw = dict(cfg.all_kwargs())
        kw.pop("maxnreg", None) if kw.get("maxnreg") is None else None
        kw.pop("ir_override", None)
        if "rows" in s:
            x, y, alpha, gamma, beta = t
            grid = (triton.cdiv(s["cols"], kw["BLOCK_N"]), s["rows"])
            args = (x, y, alpha, gamma, beta, True, s["cols"])
        else:
            a, b, c = t
            grid = (triton.cdiv(s["m"], kw[_bm(kw)]) * triton.cdiv(s["n"], kw[_bn(kw)]),)
            args = (a, b, c, s["m"], s["n"], s["k"], a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                    c.stride(1))  # fmt: skip
            if self.name == "flaggems_mm":
                kw["GROUP_M"] = 8
        if warmup:
            return self.jit.warmup(*args, grid=grid, **kw)
        return self.jit[grid](*args, **kw)

    def reference(self, torch, s: dict, t):
        if "rows" in s:
            x, _y, alpha, gamma, beta = t
            return torch.tanh(alpha.double() * x.double()) * gamma.double() + beta.double()
        return t[0].double() @ t[1].double()

    def output(self, s: dict, t):
        return t[1] if "rows" in s else t[2]


def _bm(kw):
    return "BLOCK_M" if "BLOCK_M" in kw else "BLOCK_SIZE_M"


def _bn(kw):
    return "BLOCK_N" if "BLOCK_N" in kw else "BLOCK_SIZE_N"


def dyt_programs(a, k) -> int:
    return -(-int(a["N"]) // int(k["BLOCK_N"])) * int(a["X"].shape[0])


def dyt_bytes(a, k) -> float:
    """x read and y written over the valid columns of a program's block (gamma, beta stay in L2)."""
    n, bn = int(a["N"]), int(k["BLOCK_N"])
    cols = n / -(-n // bn)
    return 2 * cols * a["X"].element_size()


# ------------------------------------------------------------------------------------ compile workers

_SPECS: dict = {}


def _spec(name):
    if name not in _SPECS:
        _SPECS[name] = Spec(name)
    return _SPECS[name]


def compile_task(name: str, shape: dict, ci: int) -> tuple[int, float | str]:
    import torch

    sp = _spec(name)
    try:
        t = sp.inputs(torch, shape, 1, empty=True)[0]
        t0 = time.time()
        sp.launch(shape, t, sp.configs[ci], warmup=True)
        return ci, round(time.time() - t0, 3)
    except Exception as e:
        return ci, "error: " + repr(e)[:160]


def specialization(sp: Spec, s: dict) -> tuple:
    if "rows" in s:
        return (s["cols"], s["dtype"])
    return (s["dtype"], s["m"] % 16 == 0, s["n"] % 16 == 0, s["k"] % 16 == 0)


# ------------------------------------------------------------------------------------ timing


def time_shape(torch, sp: Spec, s: dict, rounds: int = 3) -> list[dict]:
    from tilewise.advise.autotune import rank

    fp = sp.footprint(s)
    copies = max(1, min(MAX_COPIES, -(-L2_ROTATE_BYTES // max(fp, 1))))
    sets = sp.inputs(torch, s, copies)
    named = sp.named(s, sets[0])
    order = [c for _ms, c in rank(sp.desc, sp.configs, named)]
    top = {id(c): i for i, c in enumerate(order)}
    ref = sp.reference(torch, s, sets[0])
    est = max(3e-6, fp / 4e12, (2 * s.get("m", 0) * s.get("n", 0) * s.get("k", 0)) / 6e14)
    calls = max(copies, min(MAX_CALLS, int(-(-TARGET_REPLAY_S // est))))
    rows, entries = [], []
    for ci, cfg in enumerate(sp.configs):
        row = {"kernel": sp.name, "source": sp.source, "shape": s, "config": ci, "tag": str(cfg),
               "model_rank": top.get(id(cfg))}  # fmt: skip
        try:
            out = sp.output(s, sets[0])
            out.fill_(float("nan"))
            sp.launch(s, sets[0], cfg)
            torch.cuda.synchronize()
            d = (out.double() - ref).abs().max().item()
            row["rel_err"] = d / max(ref.abs().max().item(), 1e-6)
            row["nan"] = bool(torch.isnan(out).any().item())
            g = timing.capture(lambda i, cfg=cfg: sp.launch(s, sets[i % copies], cfg), calls, warmup=1)
            g.replay()
            entries.append((row, g))
        except Exception as e:
            row["error"] = repr(e)[:200]
        rows.append(row)
    torch.cuda.synchronize()
    # alternating rounds after a warm one, a GPU-side wait ahead of each (tilewise.bench.timing, as the sweep)
    timed = timing.time_calls(
        {str(i): g for i, (_row, g) in enumerate(entries)},
        rounds=rounds,
        flush=False,
        gpu_wait_cycles=300_000 * len(entries),
    )
    for i, (row, _g) in enumerate(entries):
        row["ms"] = timed[str(i)].median_ms
        row["calls"], row["copies"] = calls, copies
    return rows


def bench_cost(torch, sp: Spec, s: dict) -> list[float]:
    """Seconds triton.testing.do_bench takes per config at the autotuner's defaults (25 ms warm-up, 100 ms)."""
    import triton

    t = sp.inputs(torch, s, 1)[0]
    out = []
    for cfg in sp.configs[:6]:
        t0 = time.time()
        try:
            triton.testing.do_bench(lambda cfg=cfg: sp.launch(s, t, cfg), warmup=25, rep=100, quantiles=(0.5, 0.2, 0.8))
        except Exception:
            continue
        out.append(time.time() - t0)
    return out


def env(torch) -> dict:
    import platform

    import triton

    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except Exception:
        pass
    import datetime

    return {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
            "python": platform.python_version(), "host_cpu": cpu, "cpus": os.cpu_count(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv), "commit": os.environ.get("TILEWISE_COMMIT", "")}  # fmt: skip


def evidence() -> dict:
    """The autotuner's and Inductor's hooks as the installed versions define them (read, not assumed)."""
    import inspect

    out: dict = {}
    try:
        from triton.runtime.autotuner import Autotuner

        src = inspect.getsource(Autotuner.prune_configs)
        out["triton_prune_configs"] = [ln.strip() for ln in src.splitlines() if "perf_model(" in ln or
                                       "early_config_prune(" in ln or "**" in ln][:8]  # fmt: skip
        out["triton_autotune_has_do_bench"] = "do_bench" in inspect.signature(Autotuner.__init__).parameters
    except Exception as e:
        out["triton_error"] = repr(e)[:200]
    try:
        from torch._inductor import config as ic
        from torch._inductor.choices import InductorChoices

        out["inductor_choices_finalize"] = hasattr(InductorChoices, "_finalize_template_configs")
        out["inductor_choices_class_config"] = hasattr(ic, "inductor_choices_class")
    except Exception as e:
        out["inductor_error"] = repr(e)[:200]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", default="flaggems_mm,liger_dyt,inductor_mm")
    ap.add_argument("--workers", type=int, default=14)
    ap.add_argument("--budget", type=float, default=150.0)
    a = ap.parse_args(argv)
    t0 = time.time()
    os.makedirs(a.out, exist_ok=True)
    import torch

    specs, meta = [], {**env(torch), "seed": SEED, "evidence": evidence(), "kernels": {}}
    for name in a.kernels.split(","):
        try:
            sp = _spec(name)
            specs.append(sp)
            meta["kernels"][name] = {"source": sp.source, "configs": [str(c) for c in sp.configs],
                                     "shapes": sp.shapes}  # fmt: skip
        except Exception as e:
            meta["kernels"][name] = {"error": repr(e)[:300]}
            print(f"{name}: {e!r}", flush=True)
    print(json.dumps(meta["evidence"]), flush=True)
    pool = cf.ProcessPoolExecutor(max_workers=a.workers, mp_context=mp.get_context("spawn"))
    futs = {}
    for sp in specs:
        firsts = {}
        for s in sp.shapes:
            firsts.setdefault(specialization(sp, s), s)
        for key, s in firsts.items():
            for ci in range(len(sp.configs)):
                futs[(sp.name, key, ci)] = pool.submit(compile_task, sp.name, s, ci)
    out = open(os.path.join(a.out, "external.jsonl"), "w")
    for sp in specs:
        comp: dict = {}
        for (name, key, ci), f in futs.items():
            if name == sp.name:
                try:
                    comp[(key, ci)] = f.result(timeout=max(1.0, a.budget - (time.time() - t0)))[1]
                except Exception as e:
                    comp[(key, ci)] = "error: " + repr(e)[:100]
        print(f"[{time.time() - t0:6.1f}s] {sp.name}: {len(comp)} compiles", flush=True)
        meta["kernels"][sp.name]["do_bench_s"] = bench_cost(torch, sp, sp.shapes[0]) + bench_cost(torch, sp,
                                                                                                  sp.shapes[-1])  # fmt: skip
        for s in sp.shapes:
            if time.time() - t0 > a.budget:
                print(f"budget reached in {sp.name}", flush=True)
                break
            try:
                rows = time_shape(torch, sp, s)
            except Exception as e:
                rows = [{"kernel": sp.name, "shape": s, "error": repr(e)[:200]}]
            for r in rows:
                if "config" in r:
                    r["compile_s"] = comp.get((specialization(sp, s), r["config"]))
                out.write(json.dumps(r) + "\n")
            out.flush()
            torch.cuda.empty_cache()
        print(f"[{time.time() - t0:6.1f}s] {sp.name} timed", flush=True)
    pool.shutdown(wait=False, cancel_futures=True)
    with open(os.path.join(a.out, "external_meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"[{time.time() - t0:6.1f}s] done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
