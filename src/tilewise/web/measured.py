"""The hardware's answers the explorer shows beside the model, read from the packaged `data/measured.json.gz`.

That file is made by `python -m tilewise.web.measured_build` from the committed rows (CUDA
runtime occupancy answers, Nsight Compute access counters, H200 benchmark rows) and kept in
sync by tests/test_web_measured.py. Every lookup returns the entry with the file and row it
came from and that source's GPU, date and versions, or None where nothing was measured.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from importlib import resources
from typing import Any

from tilewise import gpus as _gpus
from tilewise.advise.problems import normalize
from tilewise.bench import model_rows
from tilewise.model import roofline, traffic
from tilewise.web.measured_build import access_key, occupancy_key, sweep_key

MEASURED_GPU = "h200"  # every committed row is the H200's


@cache
def load() -> dict[str, Any]:
    blob = (resources.files("tilewise.web") / "data" / "measured.json.gz").read_bytes()
    data: dict[str, Any] = json.loads(gzip.decompress(blob))
    return data


def occupancy(
    gpu_key: str, registers: int, threads: int, dynamic_smem: int, carveout: int | None
) -> dict[str, Any] | None:
    """The CUDA runtime's blocks per SM for this configuration (static smem 0, one barrier), if recorded."""
    occ = load()["occupancy"]
    if gpu_key != occ["source"]["gpu_key"]:
        return None
    hit = occ["table"].get(occupancy_key(registers, threads, dynamic_smem, -1 if carveout is None else carveout))
    if hit is None:
        return None
    blocks, line = hit
    return {"blocks_per_sm": blocks, "line": line, **occ["source"]}


def access(space: str, op: str, width: int, mask: int, offsets: list[int]) -> dict[str, Any] | None:
    """Nsight Compute's counters for the pattern equal to this warp access (same lanes, bytes, mask), if any."""
    a = load()["access"]
    hit = a["table"].get(access_key(space, op, width, mask, offsets))
    if hit is None:
        return None
    return {**hit, **a["source"]["files"][hit["file"]], "what": a["source"]["what"]}


def gemm_rows(m: int, n: int, k: int, dtype: str) -> list[dict[str, Any]]:
    """The H200 benchmark rows of the GEMM C[m, n] = A[m, k] B[k, n] in `dtype`."""
    shape = f"{m}x{n}x{k}"
    return [r for r in load()["gemm"]["rows"] if r["shape"] == shape and r["dtype"] == dtype]


def gemm_batches(n: int, k: int, dtype: str) -> list[int]:
    """The M of every H200 benchmark row of C[M, n] = A[M, k] B[k, n] in `dtype`, ascending."""
    ms = set()
    for r in load()["gemm"]["rows"]:
        m_, n_, k_ = (int(x) for x in r["shape"].split("x"))
        if (n_, k_, r["dtype"]) == (n, k, dtype):
            ms.add(m_)
    return sorted(ms)


def gemm_beside_model(gpu: _gpus.GPU, m: int, n: int, k: int, dtype: str) -> list[dict[str, Any]]:
    """Each H200 row of this GEMM beside the model today, computed here, not stored with the row (the rows were
    measured before the time model existed): `model_ms` is `tilewise.model.predict` of the config the row ran
    (`tilewise.bench.model_rows`, from its tag), `floor_ms` the roofline floor (the harness's `roofline.time` of
    `traffic.gemm_flops` and `traffic.gemm_bytes`, the row's own `predicted_ms`). Empty for any other GPU."""
    if gpu.key != MEASURED_GPU:
        return []
    floor = roofline.time(gpu, traffic.gemm_flops(m, n, k), traffic.gemm_bytes(m, n, k, dtype), dtype)
    out = []
    for r in gemm_rows(m, n, k, dtype):
        pm = model_rows.with_model(r, gpu.key)
        ms = pm["model_ms"]
        out.append(
            {
                **r,
                "model_ms": ms,
                "model_binding": pm["model_binding"],
                "model_source": pm["model_source"],
                "model_tflops": floor.flops / (ms * 1e-3) / 1e12 if ms else None,
                "measured_over_model": r["ours_ms"] / ms if ms else None,
                "floor_ms": floor.time_s * 1e3,
                "floor_bound": floor.bound,
                "floor_tflops": floor.flops / floor.time_s / 1e12,
                "measured_over_floor": r["ours_ms"] / (floor.time_s * 1e3),
            }
        )
    return out


def l2_probe(gpu: _gpus.GPU) -> dict[str, Any] | None:
    """The H200's read-bandwidth probe over working-set sizes (the rows the registry's L2 figure is the median of)."""
    if gpu.key != MEASURED_GPU:
        return None
    p = load()["l2_probe"]
    (file,) = p["sources"]
    return {"file": file, **p["sources"][file], "rows": p["rows"]}


def row(file: str, index: int) -> dict[str, Any] | None:
    """The packaged entry that names `file` and `index` (a benchmark row number, a CSV line, an Nsight
    Compute pattern id): what a measured figure's link shows."""
    d = load()
    for section in ("gemm", "designs", "l2_probe"):
        for r in d.get(section, {}).get("rows", []):
            if r["file"] == file and r["row"] == index:
                return {"file": file, "row": index, "source": d[section]["sources"][file], "entry": r}
    occ = d["occupancy"]
    if file == occ["source"]["file"]:
        for key, (blocks, line) in occ["table"].items():
            if line == index:
                regs, threads, dyn, carveout = (int(x) for x in key.split(","))
                entry = {"num_regs": regs, "threads": threads, "dynamic_smem": dyn, "carveout": carveout}
                entry |= {"static_smem": 0, "barriers": 1, "blocks": blocks}
                return {"file": file, "row": index, "source": occ["source"], "entry": entry}
    acc = d["access"]
    if file in acc["source"]["files"]:
        for key, e in acc["table"].items():
            if e["file"] == file and e["id"] == index:
                space, op, width, mask, lanes = key.split("|")
                entry = {**e, "space": space, "op": op, "width": int(width), "mask": int(mask), "offsets": lanes}
                return {"file": file, "row": index, "source": acc["source"]["files"][file], "entry": entry}
    return None


def sweep_best(kernel: str, problem: dict[str, Any], gpu_key: str, family: str | None = None) -> dict[str, Any] | None:
    """The fastest config the committed sweeps (tests/data/sweeps/) measured for this exact problem, if any, with
    every config's time. `family`: the sweep, where it is not the kernel's own ("gemm_gluon": the Gluon GEMM's
    space on a GEMM problem, with cuBLAS and matmul's dispatch of that run)."""
    if gpu_key != MEASURED_GPU:
        return None
    hit = load()["sweeps"]["table"].get(sweep_key(family or kernel, normalize(kernel, problem)))
    return None if hit is None else {**hit, "times": dict(hit["times"])}


def design_rows() -> list[dict[str, Any]]:
    """The FA3 designs' measured rows (benchmarks/results/h200/attention_fa3_designs.json), once committed."""
    rows: list[dict[str, Any]] = load().get("designs", {}).get("rows", [])
    return rows
