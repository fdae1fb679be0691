"""Measured beside predicted: the packaged data equals the committed rows, and each panel's
measured figure is the committed row of the same configuration, named by file and row."""

import csv
import gzip
import json
import warnings
from pathlib import Path

import pytest

pytest.importorskip("starlette")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from tilewise.web import api, measured, measured_build
from tilewise.web.server import create_app

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(), base_url="http://127.0.0.1") as c:
        yield c


def test_packaged_file_is_in_sync_with_the_committed_rows():
    """One source of truth: rebuilding from tests/data and benchmarks/results gives the committed bytes."""
    fresh = measured_build.encode(measured_build.build(ROOT))
    assert fresh == measured_build.OUT.read_bytes(), "run: python -m tilewise.web.measured_build"


def _csv_rows():
    with gzip.open(ROOT / "tests/data/occupancy/h200.csv.gz", "rt") as f:
        return list(csv.DictReader(f))


def test_occupancy_measured_is_the_runtime_row():
    rows = _csv_rows()
    for threads, regs, smem_kb in ((256, 64, 48), (1024, 32, 0), (128, 128, 227), (96, 247, 16)):
        d = api.call(
            "occupancy", {"gpu": "h200", "threads": str(threads), "registers": str(regs), "smem": str(smem_kb * 1024)}
        )
        m = d["measured"]
        assert m is not None, (threads, regs, smem_kb)
        line = rows[m["line"] - 2]  # the line it names
        assert (int(line["threads"]), int(line["num_regs"]), int(line["dynamic_smem"])) == (
            threads,
            regs,
            smem_kb * 1024,
        )
        assert (line["static_smem"], line["barriers"], line["carveout"]) == ("0", "1", "-1")
        assert m["blocks_per_sm"] == int(line["blocks"]) == d["result"]["blocks_per_sm"]
        assert m["gpu"].startswith("NVIDIA H200") and m["date"] == "2026-11-30" and "cuda_13.0" in m["nvcc"]
    # not measured: another GPU, or a register count the fixture's kernels never had
    assert api.call("occupancy", {"gpu": "h100-sxm"})["measured"] is None
    assert api.call("occupancy", {"gpu": "h200", "registers": "63"})["measured"] is None


def _ncu(name: str, space: str, op: str, width: int) -> dict:
    for i in range(1, 6):
        d = json.loads((ROOT / f"tests/data/ncu/ncu_access_round{i}.json").read_text())
        for p in d["patterns"]:
            if (p["name"], p["space"], p["op"], p["width"], p["mask"]) == (name, space, op, width, 0xFFFFFFFF):
                return {"file": f"tests/data/ncu/ncu_access_round{i}.json", **p}
    raise AssertionError(f"no pattern {name} {space} {op} {width}")


def test_access_measured_is_the_nsight_compute_pattern():
    cases = [
        ("shared", "column", "stride128B", "ld", "wavefronts", "bank_conflicts"),
        ("shared", "padded", "stride132B", "ld", "wavefronts", "bank_conflicts"),
        ("global", "contiguous", "contiguous", "ld", "sectors", "requests"),
        ("global", "strided", "stride4096B", "ld", "sectors", "requests"),
    ]
    for space, preset, ncu_name, op, a, b in cases:
        d = api.call("access", {"space": space, "preset": preset})
        p = _ncu(ncu_name, space, op, 4)
        m = d["measured"]
        assert m["file"] == p["file"] and m["id"] == p["id"] and m["name"] == ncu_name
        met = p["metrics"]
        prefix = "l1tex__t_" if space == "global" else "l1tex__data_"
        if space == "global":
            want = (
                met[f"{prefix}sectors_pipe_lsu_mem_global_op_{op}.sum"],
                met[f"{prefix}requests_pipe_lsu_mem_global_op_{op}.sum"],
            )
        else:
            want = (
                met[f"{prefix}pipe_lsu_wavefronts_mem_shared_op_{op}.sum"],
                met[f"{prefix}bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"],
            )
        assert (m["counts"][a], m["counts"][b]) == want == (d["counts"][a], d["counts"][b])
        assert m["gpu"] == "NVIDIA H200" and "2025.3.1" in m["ncu"]
    assert api.call("access", {"space": "shared", "preset": "swizzled"})["measured"] is None


def test_gemm_measured_rows_in_hierarchy_and_decode():
    bench = json.loads((ROOT / "benchmarks/results/h200/gemm.json").read_text())
    by_shape = {r["shape"]: (i, r) for i, r in enumerate(bench["rows"]) if r["dtype"] == "bf16"}
    (m,) = api.call("hierarchy", {"gpu": "h200"})["measured"]
    i, r = by_shape["64x24576x8192"]
    assert (m["file"], m["row"]) == ("benchmarks/results/h200/gemm.json", i)
    for k in ("ours_ms", "tflops", "peer_ms", "config", "gpu", "date", "torch", "triton", "command"):
        assert m[k] == r[k], k
    assert m["floor_ms"] == pytest.approx(r["predicted_ms"])  # the roofline floor has not moved since the run
    assert api.call("hierarchy", {"gpu": "h100-sxm"})["measured"] == []
    d = api.call("decode", {"gpu": "h200"})
    shapes = [x["shape"] for x in d["measured"]]
    want = sorted((s for s in by_shape if s.endswith("x24576x8192")), key=lambda s: int(s.split("x")[0]))
    assert shapes == want and len(shapes) >= 1  # the quoted re-measure times 64 x 24576 x 8192 alone
    for x in d["measured"]:
        assert x["ours_ms"] == by_shape[x["shape"]][1]["ours_ms"]


def test_every_measured_figure_links_to_its_row(client):
    d = api.call("hierarchy", {"gpu": "h200"})["measured"][0]
    r = client.get("/api/row", params={"file": d["file"], "row": d["row"]})
    assert r.status_code == 200 and r.json()["entry"]["ours_ms"] == d["ours_ms"]
    o = api.call("occupancy", {"gpu": "h200"})["measured"]
    r = client.get("/api/row", params={"file": o["file"], "row": o["line"]}).json()
    assert r["entry"]["blocks"] == o["blocks_per_sm"] and r["entry"]["threads"] == 256
    a = api.call("access", {"space": "shared", "preset": "column"})["measured"]
    r = client.get("/api/row", params={"file": a["file"], "row": a["id"]}).json()
    assert r["entry"]["counts"] == a["counts"] and r["entry"]["name"] == "stride128B"
    assert client.get("/api/row", params={"file": "nope", "row": 1}).status_code == 404
    assert client.get("/api/row", params={"file": d["file"], "row": "x"}).status_code == 400
    assert client.get("/api/row", params={"what": 1}).status_code == 400


def test_lookups_take_the_keys_the_build_writes():
    key = measured_build.access_key("shared", "ld", 4, 0x1, [0, *range(1, 32)])
    assert key.endswith("|0," + ",".join(["_"] * 31))  # inactive lanes cannot change the counters
    assert measured.load()["occupancy"]["source"]["gpu_key"] == "h200"


def test_designs_file_is_packaged_row_by_row_when_committed(tmp_path):
    """The FA3 designs file (schema: design, shape, measured_ms, tflops, tc_active, model_utilization and the row tags) is picked up as soon as it exists, each row naming
    its file and index; until then the build has no `designs` and the pipeline panel says so."""
    for rel in [
        measured_build.OCCUPANCY_CSV,
        measured_build.OCCUPANCY_META,
        *measured_build.NCU_ROUNDS,
        *measured_build.GEMM_FILES,
        measured_build.L2_PROBE_FILE,
        f"{measured_build.SWEEP_DIR}/meta.json",
        *(f"{measured_build.SWEEP_DIR}/{f}.jsonl" for f in measured_build.SWEEP_FAMILIES),
        f"{measured_build.SWEEP_DIR}/{measured_build.GLUON_SWEEP[0]}.jsonl",
        f"{measured_build.SWEEP_DIR}/{measured_build.GLUON_SWEEP[2]}",
    ]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).symlink_to(ROOT / rel)
    assert "designs" not in measured_build.build(tmp_path)  # no file, no section
    tags = {"gpu": "NVIDIA H200", "date": "2026-12-01", "torch": "2.11.0+cu130", "triton": "3.6.0", "command": "x"}
    rows = [
        {
            "design": d,
            "shape": "B4 H32 S4096 D128",
            "measured_ms": ms,
            "tflops": tf,
            "tc_active": tc,
            "model_utilization": u,
            **tags,
        }
        for d, ms, tf, tc, u in (
            ("a", 3.0, 300.0, None, 0.6),
            ("b", 2.5, 360.0, 0.7, 0.65),
            ("c", 2.0, 450.0, 0.9, 0.94),
        )
    ]
    (tmp_path / measured_build.DESIGNS_FILE).write_text(json.dumps({"meta": tags, "rows": rows}))
    got = measured_build.build(tmp_path)["designs"]
    assert [r["design"] for r in got["rows"]] == ["a", "b", "c"]
    for i, (r, want) in enumerate(zip(got["rows"], rows)):
        assert r["file"] == measured_build.DESIGNS_FILE and r["row"] == i
        assert {k: r[k] for k in want} == want
    assert got["sources"][measured_build.DESIGNS_FILE] == tags


def test_pipeline_designs_carry_the_letters_the_rows_use():
    d = api.call("pipeline", {"stages": "3"})
    assert [(x["design_letter"], x["title"][:3]) for x in d["designs"]] == [("a", "(a)"), ("b", "(b)"), ("c", "(c)")]
    assert d["designs"][1]["title"].startswith("(b) 3-stage")


def test_l2_probe_beside_the_registrys_l2_figure():
    """The hierarchy panel's measured read bandwidth is the committed probe, row for row; the registry's L2
    figure is, as gpus.py says, the median of the ld.global.cg rows from 8 to 48 MiB."""
    import statistics

    from tilewise import gpus

    probe = json.loads((ROOT / "benchmarks/results/h200/l2_probe.json").read_text())
    d = api.call("hierarchy", {"gpu": "h200"})["l2_probe"]
    assert [{k: r[k] for k in probe["data"]["rows"][0]} for r in d["rows"]] == probe["data"]["rows"]
    assert [r["row"] for r in d["rows"]] == list(range(len(probe["data"]["rows"])))
    assert d["gpu"] == "NVIDIA H200" and d["date"] == "2026-11-30" and d["triton"] == "3.6.0"
    cg = [r["TBps"] for r in d["rows"] if r["cg"] and 8 <= r["MiB"] <= 48]
    assert len(cg) == 12
    assert gpus.bandwidth(gpus.get("h200"), "l2") / 1e12 == pytest.approx(statistics.median(cg), abs=0.005)
    assert api.call("hierarchy", {"gpu": "a100"})["l2_probe"] is None


def test_pipeline_measured_designs_are_the_committed_rows():
    from tilewise.model import pipeline

    committed = json.loads((ROOT / measured_build.DESIGNS_FILE).read_text())["rows"]
    got = api.call("pipeline", {"gpu": "h200"})["measured"]
    assert [r["design"] for r in got] == ["a", "b", "c"] == [r["design"] for r in committed]
    for i, (g, c) in enumerate(zip(got, committed)):
        assert (g["file"], g["row"]) == (measured_build.DESIGNS_FILE, i)
        for k in ("measured_ms", "tflops", "tc_active", "block", "gpu", "date", "torch", "triton", "command"):
            assert g[k] == c[k], k
        # the model beside it is the kernel model today, at the measured shape
        assert (
            g["model_utilization_now"]
            == pipeline.predict_kernel_designs(4096, 4096, 128)[c["design_name"]].tensor_utilisation
        )
        assert g["model_utilization_now"] == pytest.approx(c["model_utilization"])  # unchanged since the run
    # ping-pong keeps the Tensor Cores busiest, measured and modelled
    assert max(got, key=lambda r: r["tc_active"])["design"] == "c"
    assert api.call("pipeline", {"gpu": "h100-sxm"})["measured"] == []
