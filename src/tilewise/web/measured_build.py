"""Build `tilewise/web/data/measured.json.gz`: the committed hardware answers the explorer shows beside the model.

Run from the repository root after any of the source files changes:

    python -m tilewise.web.measured_build

One source of truth: the rows committed under tests/data/ and benchmarks/results/h200/. This
script only selects and reshapes them (no figure is computed here); each entry keeps the file
and row it came from, and each source keeps its GPU, date and tool versions. The installed
package ships the result, so the explorer never needs a GPU or the repository.
tests/test_web_measured.py rebuilds it in memory and fails if the committed file differs.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

from tilewise.advise.problems import normalize
from tilewise.errors import InputError

OUT = Path(__file__).parent / "data" / "measured.json.gz"

OCCUPANCY_CSV = "tests/data/occupancy/h200.csv.gz"
OCCUPANCY_META = "tests/data/occupancy/h200.meta.json"
NCU_ROUNDS = [f"tests/data/ncu/ncu_access_round{i}.json" for i in range(1, 6)]
GEMM_FILES = ["benchmarks/results/h200/gemm.json", "benchmarks/results/h200/gemm_fp16.json"]
SWEEP_DIR = "tests/data/sweeps/h200"
SWEEP_FAMILIES = ("gemm", "attention", "decode", "grouped")
# the Gluon GEMM's sweep (its space on the GEMM problems): keyed "gemm_gluon|...", with its own meta file
GLUON_SWEEP = ("gemm_gluon", "gemm", "gemm_gluon_meta.json")
L2_PROBE_FILE = "benchmarks/results/h200/l2_probe.json"
DESIGNS_FILE = "benchmarks/results/h200/attention_fa3_designs.json"  # written by the FA3 work, when it lands

# The benchmark row fields the panels show (the rest stays in the committed file the row names).
GEMM_FIELDS = (
    "kernel",
    "shape",
    "dtype",
    "ours_ms",
    "ours_p20_ms",
    "ours_p80_ms",
    "tflops",
    "tbps",
    "peer",
    "peer_ms",
    "peer_tflops",
    "predicted_ms",
    "predicted_bound",
    "config",
    "gpu",
    "date",
    "torch",
    "triton",
    "command",
)
DESIGN_FIELDS = (
    "design",
    "design_name",
    "block",
    "fraction_of_sustained_peak",
    "ncu_ms",
    "shape",
    "measured_ms",
    "tflops",
    "tc_active",
    "model_utilization",
    "gpu",
    "date",
    "torch",
    "triton",
    "command",
)


def _read(root: Path, rel: str) -> bytes:
    path = root / rel
    if not path.is_file():
        raise InputError(f"{rel} must exist under {root} (run this from the repository root), got no such file")
    return path.read_bytes()


def occupancy_key(registers: int, threads: int, dynamic_smem: int, carveout: int) -> str:
    """The lookup key of one runtime answer (static shared memory 0, one named barrier)."""
    return f"{registers},{threads},{dynamic_smem},{carveout}"


def access_key(space: str, op: str, width: int, mask: int, offsets: list[int]) -> str:
    """The lookup key of one Nsight Compute pattern: the warp's 32 byte offsets from an aligned base.

    An inactive lane's offset is written `_`: it issues nothing, so the counters cannot depend on it.
    """
    lanes = ",".join(str(o) if mask >> i & 1 else "_" for i, o in enumerate(offsets))
    return f"{space}|{op}|{width}|{mask}|{lanes}"


def sweep_key(kernel: str, problem: dict[str, Any]) -> str:
    """The lookup key of one swept problem: the kernel and its fields in sorted order."""
    return kernel + "|" + ",".join(f"{k}={problem[k]}" for k in sorted(problem))


def _occupancy(root: Path) -> dict[str, Any]:
    meta = json.loads(_read(root, OCCUPANCY_META))
    text = gzip.decompress(_read(root, OCCUPANCY_CSV)).decode()
    table: dict[str, list[int]] = {}
    # The explorer's controls reach static shared memory 0 and one barrier; the slider moves threads in
    # warps and shared memory in KB, the API takes any value, so every such row is kept.
    for row_no, r in enumerate(csv.DictReader(io.StringIO(text)), start=2):  # line 1 is the header
        if r["static_smem"] != "0" or r["barriers"] != "1" or r["status"] != "0":
            continue
        key = occupancy_key(int(r["num_regs"]), int(r["threads"]), int(r["dynamic_smem"]), int(r["carveout"]))
        blocks = int(r["blocks"])
        if key in table and table[key][0] != blocks:
            raise InputError(f"{OCCUPANCY_CSV} must agree with itself, got {key} -> {table[key][0]} and {blocks}")
        table.setdefault(key, [blocks, row_no])  # the first line with this answer
    return {
        "source": {
            "file": OCCUPANCY_CSV,
            "gpu_key": "h200",
            "gpu": meta["gpu"],
            "date": meta["date"],
            "nvcc": meta["nvcc"],
            "command": meta["command"],
            "what": "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
            "row": "line of the CSV (line 1 = header)",
        },
        "table": table,
    }


def _access_counts(p: dict[str, Any]) -> dict[str, Any] | None:
    """Nsight Compute's counters for the access itself, named as `tilewise.sim.analyze_access` names its counts."""
    m, op, space = p["metrics"], p["op"], p["space"]
    if op == "atom":
        # An atom whose result nobody reads is compiled to RED and filed under op_red: not the panel's atomicAdd.
        if m.get(f"smsp__sass_inst_executed_op_{space}_red.sum", 0):
            return None
    elif op not in ("ld", "st"):
        return None
    if space == "global":
        return {
            "sectors": m[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"],
            "requests": m[f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"],
        }
    return {
        "wavefronts": m[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"],
        "bank_conflicts": m[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"],
    }


def _access(root: Path) -> dict[str, Any]:
    files: dict[str, Any] = {}
    table: dict[str, Any] = {}
    for rel in NCU_ROUNDS:
        d = json.loads(_read(root, rel))
        files[rel] = {"date": d["date"], "round": d["round"], "ncu": d["tools"]["ncu"].splitlines()[-1].strip()}
        smi = d["tools"].get("nvidia-smi", "")
        files[rel]["gpu"] = "NVIDIA H200" if "H200" in smi else smi.splitlines()[0] if smi else ""
        for p in d["patterns"]:
            counts = _access_counts(p)
            if counts is None:
                continue
            key = access_key(p["space"], p["op"], p["width"], p["mask"], p["offsets"])
            entry = {"file": rel, "id": p["id"], "name": p["name"], "kernel": p["kernel"], "counts": counts}
            if key in table and table[key]["counts"] != counts:
                raise InputError(f"the Nsight Compute rounds must agree, got {key}: {table[key]} and {entry}")
            table.setdefault(key, entry)
    return {"source": {"files": files, "what": "Nsight Compute counters, one warp, one instruction"}, "table": table}


def _rows(root: Path, rels: list[str], fields: tuple[str, ...]) -> dict[str, Any]:
    out, metas = [], {}
    for rel in rels:
        d = json.loads(_read(root, rel))
        metas[rel] = d.get("meta", {})
        for i, r in enumerate(d["rows"]):
            out.append({**{k: r.get(k) for k in fields}, "file": rel, "row": i})
    return {"sources": metas, "rows": out}


def _l2_probe(root: Path) -> dict[str, Any]:
    d = json.loads(_read(root, L2_PROBE_FILE))
    rows = [{**r, "file": L2_PROBE_FILE, "row": i} for i, r in enumerate(d["data"]["rows"])]
    return {"sources": {L2_PROBE_FILE: d["meta"]}, "rows": rows}


def _sweeps(root: Path) -> dict[str, Any]:
    """Per swept problem: every config of the space that was timed (tag -> ms), the fastest with its line,
    and the fastest of each peer (cuBLAS, SDPA, the hand rules, nvidia-matmul-heuristics). The Gluon GEMM's
    sweep goes in under its own key family ("gemm_gluon"), tagged with its own run's GPU, date and tools."""
    meta = json.loads(_read(root, f"{SWEEP_DIR}/meta.json"))
    tag_keys = ("gpu", "date", "torch", "triton", "command")
    tags = {k: meta[k] for k in tag_keys}
    runs = [(family, family, tags) for family in SWEEP_FAMILIES]
    gluon_family, gluon_problem, gluon_meta = GLUON_SWEEP
    gmeta = json.loads(_read(root, f"{SWEEP_DIR}/{gluon_meta}"))
    runs.append((gluon_family, gluon_problem, {k: gmeta[k] for k in tag_keys}))
    table: dict[str, dict[str, Any]] = {}
    for family, problem_kind, run_tags in runs:
        rel = f"{SWEEP_DIR}/{family}.jsonl"
        part: dict[str, dict[str, Any]] = {}
        for line_no, line in enumerate(_read(root, rel).decode().splitlines(), start=1):
            if not line.strip():
                continue
            r = json.loads(line)
            ms = r.get("ms")
            if ms is None:
                continue  # a config that failed to run: the fixture keeps its error, the explorer shows times
            key = sweep_key(family, normalize(problem_kind, r["problem"]))
            e = part.setdefault(key, {"file": rel, "times": {}, "others": {}, "configs": 0})
            if r.get("source", "space") == "space":
                e["configs"] += 1
                e["times"][r["tag"]] = min(ms, e["times"].get(r["tag"], ms))
                if "ms" not in e or ms < e["ms"]:
                    e.update(ms=ms, tag=r["tag"], config=r["config"], row=line_no)
            else:
                o = e["others"].get(r["source"])
                if o is None or ms < o["ms"]:
                    e["others"][r["source"]] = {"ms": ms, "tag": r.get("tag", r["source"]), "row": line_no}
        table.update({k: {**v, **run_tags} for k, v in part.items() if "ms" in v})
    return {"source": {"dir": SWEEP_DIR, **tags}, "table": table}


def build(root: Path) -> dict[str, Any]:
    data = {
        "about": "made by python -m tilewise.web.measured_build from the committed files each entry names",
        "occupancy": _occupancy(root),
        "access": _access(root),
        "gemm": _rows(root, GEMM_FILES, GEMM_FIELDS),
        "l2_probe": _l2_probe(root),
        "sweeps": _sweeps(root),
    }
    if (root / DESIGNS_FILE).is_file():
        data["designs"] = _rows(root, [DESIGNS_FILE], DESIGN_FIELDS)
    return data


def encode(data: dict[str, Any]) -> bytes:
    """Deterministic bytes: sorted keys, gzip without a timestamp, so a rebuild is byte-identical."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", help="the repository root (default: the current directory)")
    ap.add_argument("--out", default=str(OUT), help=f"where to write (default {OUT})")
    args = ap.parse_args(argv)
    blob = encode(build(Path(args.root)))
    Path(args.out).write_bytes(blob)
    print(f"wrote {args.out} ({len(blob):,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
