"""Does tilewise's choice filter work inside a real `torch.compile(mode="max-autotune")`?

    python benchmarks/probes/inductor_hook.py --out DIR/inductor_hook.json [--deadline 90]

Per GEMM shape, two cold compiles of `a @ b` with mode="max-autotune", each in its own process with
its own empty Inductor and Triton caches (`TORCHINDUCTOR_FORCE_DISABLE_CACHES=1`): Inductor's own
autotuning (every choice), then with `torch._inductor.config.inductor_choices_class` set to
`tilewise.advise.inductor.choices(top_k=3)`. Each records what Inductor benchmarked (its feedback
hook, `select_algorithm.add_feedback_saver`: every choice with its measured ms), what the filter
received and kept (the Triton `mm` template's configs), the wall-clock seconds of the first call
(compile + autotuning), the compiled function's time afterwards, and its error against float64.
Whether the model's top 3 hold the fastest Triton config of the exhaustive run is read off the pair.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "src"))

SHAPES = ({"m": 2048, "n": 8192, "k": 4096, "dtype": "bf16"}, {"m": 128, "n": 4096, "k": 14336, "dtype": "fp16"})
TOP_K = 3


def _params(c: Any) -> dict[str, Any]:
    try:
        return {k: v for k, v in c.params.to_kwargs().items() if isinstance(v, (int, float, str, bool))}
    except Exception:  # a choice without params (ATen)
        return {}


def one(shape: dict[str, Any], top_k: int | None) -> dict[str, Any]:
    """One cold max-autotune compile in this process (called in a fresh subprocess)."""
    import torch
    import torch._inductor.config as ic
    from torch._inductor import select_algorithm as sa

    log: dict[str, Any] = {"shape": shape, "top_k": top_k, "filtered": [], "benchmarked": []}
    if top_k is not None:
        from tilewise.advise import inductor as ti

        orig = ti.prune

        def logged(ktcs: Any, kernel_inputs: Any, k: int, desc: Any, cal: Any = None) -> list[Any]:
            ktcs = list(ktcs)
            out = orig(ktcs, kernel_inputs, k, desc, cal)
            log["filtered"].append({
                "problem": ti.problem_of(kernel_inputs),
                "in": [[getattr(getattr(c, "template", None), "uid", "?"), _params(c)] for c in ktcs],
                "kept": [[getattr(getattr(c, "template", None), "uid", "?"), _params(c)] for c in out],
            })  # fmt: skip
            return out

        ti.prune = logged  # choices() looks `prune` up in its module at call time
        ic.inductor_choices_class = lambda: ti.choices(top_k=top_k)

    def feedback(timings: Any, name: Any, *_rest: Any) -> None:
        log["benchmarked"].append({"op": str(name), "choices": sorted(
            ([str(getattr(c, "description", c))[:300], getattr(c, "name", "?"), float(ms)] for c, ms in timings.items()),
            key=lambda x: x[2])})  # fmt: skip

    sa.add_feedback_saver(feedback)
    dt = torch.float16 if shape["dtype"] == "fp16" else torch.bfloat16
    a = torch.randn(shape["m"], shape["k"], device="cuda", dtype=dt)
    b = torch.randn(shape["k"], shape["n"], device="cuda", dtype=dt)
    f = torch.compile(lambda x, y: x @ y, mode="max-autotune", dynamic=False)
    t0 = time.time()
    try:
        out = f(a, b)
        torch.cuda.synchronize()
    except Exception as e:
        import traceback

        log["error"] = repr(e)[:500]
        log["traceback"] = traceback.format_exc()[-3000:]
        return log
    log["first_call_s"] = round(time.time() - t0, 2)
    ref = a.double() @ b.double()
    log["rel_err"] = float((out.double() - ref).abs().max() / ref.abs().max())
    import triton

    log["compiled_ms"] = float(triton.testing.do_bench(lambda: f(a, b), warmup=10, rep=50))
    log["cublas_ms"] = float(triton.testing.do_bench(lambda: a @ b, warmup=10, rep=50))
    return log


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline", type=float, default=90.0, help="start no compile after this many seconds")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds one compile process may take")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # JSON {"shape", "top_k"}: the subprocess
    a = ap.parse_args(argv)
    if a.one:
        job = json.loads(a.one)
        with open(a.out, "w") as f:
            json.dump(one(job["shape"], job["top_k"]), f, indent=1)
        return 0
    import torch
    import triton

    from tilewise.bench.harness import env_tags

    meta = env_tags("python " + " ".join([os.path.relpath(sys.argv[0]), *sys.argv[1:]]))
    meta.update({"torch": torch.__version__, "triton": triton.__version__,
                 "reproduce": "python benchmarks/probes/inductor_hook.py --out benchmarks/results/h200/inductor_hook.json"})  # fmt: skip
    t0 = time.time()
    runs: list[dict[str, Any]] = []
    for shape in SHAPES:
        for top_k in (TOP_K, None):  # the filtered compile first: it is the question
            if time.time() - t0 > a.deadline:
                runs.append({"shape": shape, "top_k": top_k, "skipped": "deadline"})
                continue
            t1 = time.time()
            with tempfile.TemporaryDirectory() as tmp:
                envs = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, "inductor"),
                        "TRITON_CACHE_DIR": os.path.join(tmp, "triton"), "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}  # fmt: skip
                part = os.path.join(tmp, "run.json")
                job = json.dumps({"shape": shape, "top_k": top_k})
                p = subprocess.run([sys.executable, __file__, "--out", part, "--one", job], env=envs,
                                   capture_output=True, text=True, timeout=a.timeout)  # fmt: skip
                try:
                    with open(part) as f:
                        run = json.load(f)
                except (OSError, ValueError):
                    run = {"shape": shape, "top_k": top_k, "error": f"rc {p.returncode}", "stderr": p.stderr[-3000:]}
                run["process_s"] = round(time.time() - t1, 1)
                runs.append(run)
                print(json.dumps({k: run.get(k) for k in ("shape", "top_k", "first_call_s", "rel_err", "error")}),
                      flush=True)  # fmt: skip
            with open(a.out, "w") as f:  # after every compile: a cut run keeps what it finished
                json.dump({"meta": meta, "data": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
