"""nvidia-matmul-heuristics' Triton-target top-1 for every GEMM problem of the sweep, on the CPU.

    python benchmarks/sweeps/nmh_configs.py      # writes benchmarks/sweeps/nmh_gemm.json

Needs `pip install nvidia-matmul-heuristics` (0.1.0.27 here). The H200_SXM preset, the Triton target,
PERF_MODEL_BASED_AUTO_TUNING, precision BSS (bf16 in, fp32 accumulate, bf16 out; HSS for fp16).
Each answer is mapped to our pointer GEMM kernel (tilewise.kernels.gemm.Config): CTA tile -> block
sizes, warps = (cta_m / warp_m) x (cta_n / warp_n), split-K as is, stages lowered until the tile
ring fits shared memory (the library proposes up to 8, our kernel holds stages - 1 tiles). The
sweep times the mapped config beside ours; the library's own runtime estimate is kept to score it.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))

import problems  # noqa: E402

from tilewise.advise import space  # noqa: E402


def main() -> None:
    import nvMatmulHeuristics as nmh

    h = nmh.NvMatmulHeuristicsInterfaceEx(
        nmh.NvMatmulHeuristicsTarget.TRITON,
        flags=nmh.NvMatmulHeuristicsFlags.PERF_MODEL_BASED_AUTO_TUNING,
        gpu=nmh.NvMatmulHeuristicsNvidiaGpu.H200_SXM,
    )
    out = {}
    # the sweep's problems and the fresh held-out set's (problems.fresh_problems)
    for p in problems.gemm_problems() + problems.fresh_problems("gemm"):
        layout = (
            nmh.NvMatmulHeuristicsMatmulLayout.NT_ROW_MAJOR
            if p["layout"] == "nt"
            else nmh.NvMatmulHeuristicsMatmulLayout.NN_ROW_MAJOR
        )
        prec = "BSS" if p["dtype"] == "bf16" else "HSS"
        res = h.get(h.makeNvMatmulHeuristicsProblem(p["m"], p["n"], p["k"], layout), 1, precision=prec)
        if not res:
            continue
        kc = res[0]["kernel"]
        warps = (kc.cta_tile_m // kc.warp_tile_m) * (kc.cta_tile_n // kc.warp_tile_n)
        cfg = {
            "block_m": kc.cta_tile_m,
            "block_n": kc.cta_tile_n,
            "block_k": kc.cta_tile_k,
            "group_m": 8,
            "split_k": max(1, kc.split_k),
            "num_warps": warps,
            "num_stages": kc.stages,
            "persistent": False,
            "warp_specialize": False,
            "stream_b": False,
        }
        e = 2
        limit = 232448 - 1024
        while cfg["num_stages"] > 2 and space.gemm_smem_bytes(cfg, e) > limit:
            cfg["num_stages"] -= 1
        out[problems.gemm_key(p)] = {
            "config": cfg,
            "nmh": str(kc),
            "nmh_stages": kc.stages,
            "predicted_ms": res[0]["runtime"] * 1e3,
        }
    path = os.path.join(HERE, "nmh_gemm.json")
    with open(path, "w") as f:
        json.dump({"library": "nvidia-matmul-heuristics 0.1.0.27", "gpu": "H200_SXM", "target": "TRITON",
                   "configs": out}, f, indent=1)  # fmt: skip
    print(f"{len(out)} configs -> {path}")


if __name__ == "__main__":
    main()
