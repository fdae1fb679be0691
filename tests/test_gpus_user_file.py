"""A user's own GPU: a TOML or JSON file read by `tilewise.gpus.load` and by `--gpu FILE` on every
command, checked field by field, through every report, the advisor (datasheet-only) and the explorer's
GPU menu; and the Ada / Hopper registry entries, whose reports speak of their own instructions."""

from __future__ import annotations

import json

import pytest
from helpers import cli

from tilewise import gpus
from tilewise.errors import InputError

L4_TOML = """
key = "my-l4"
name = "NVIDIA L4 (my datasheet)"
arch = "ada"
sms = 58
tensor_clock_mhz = 2040
max_clock_mhz = 2040
memory_bytes = 24e9
hbm_bytes_per_s = 300e9
l2_bytes = 50331648
dense_macs_per_tc_per_cycle = { bf16 = 64, fp16 = 64, tf32 = 32, fp8 = 128, int8 = 256 }
"""


@pytest.fixture(autouse=True)
def _forget_loaded():
    """The registry is the process's: every GPU a test loads leaves with it."""
    yield
    for g in gpus.list():
        if gpus.is_user(g):
            gpus.forget(g.key)


@pytest.fixture
def l4(tmp_path):
    p = tmp_path / "l4.toml"
    p.write_text(L4_TOML)
    return str(p)


def test_load_reads_every_field_and_sources_it(l4):
    g = gpus.load(l4)
    assert (g.key, g.arch, g.compute_capability, g.sms) == ("my-l4", "ada", (8, 9), 58)
    assert g.memory_bytes == 24 * 10**9 and isinstance(g.memory_bytes, int)
    # the peak from the file's figures, multiplied out here: 2 x 64 MACs x 4 TCs x 58 SMs x 2.04 GHz
    assert gpus.peak_flops(g) == pytest.approx(2 * 64 * 4 * 58 * 2040e6)
    assert g.source("sms") == f"user file {l4}"
    assert not g.wgmma and not g.tma  # Ada: the file cannot claim Hopper's instructions
    assert g.smem_per_sm == gpus.get("l40s").smem_per_sm  # what it does not give comes from Ada's entry
    assert gpus.get("my-l4") == g and gpus.is_user(g) and not gpus.is_user(gpus.get("h200"))
    json.dumps(g.to_dict(), allow_nan=False)


def test_json_works_like_toml(tmp_path):
    p = tmp_path / "g.json"
    p.write_text(json.dumps({"key": "my-h100ish", "name": "test Hopper", "arch": "hopper", "sms": 100}))
    g = gpus.load(str(p))
    assert g.sms == 100 and g.wgmma and gpus.peak_flops(g) == pytest.approx(4096 * 100 * g.tensor_clock_mhz * 1e6)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("key = 'x'\nname = 'x'", "arch is required"),
        ("key = 'x2'\nname = 'x'\narch = 'volta'", "arch must be one of ampere, ada, hopper, blackwell, got 'volta'"),
        ("key = 'x3'\nname = 'x'\narch = 'ada'\nsms = -4", "sms must be an integer >= 1, got -4"),
        ("key = 'x4'\nname = 'x'\narch = 'ada'\nsms = 1.5", "sms must be an integer from 1 to"),
        ("key = 'x5'\nname = 'x'\narch = 'ada'\nsms = true", "sms must be an integer from 1 to"),
        ("key = 'x6'\nname = 'x'\narch = 'ada'\nhbm_bytes_per_s = nan", "hbm_bytes_per_s must be a finite number"),
        ("key = 'x7'\nname = 'x'\narch = 'ada'\nhbm_bytes_per_s = inf", "hbm_bytes_per_s must be a finite number"),
        ("key = 'x8'\nname = 'x'\narch = 'ada'\nwgmma = true", "wgmma must be false on ada, got true"),
        ("key = 'x9'\nname = 'x'\narch = 'ada'\nsmz = 3", "unknown fields ['smz']"),
        ("key = 'h200'\nname = 'x'\narch = 'hopper'", "key must not be a built-in registry name"),
        ("key = 'x10'\nname = 'x'\narch = 'ada'\nsmem_per_sm = 1048576", "smem_per_sm <= l1_smem_bytes_per_sm"),
        ("key = 'x11'\nname = 'x'\narch = 'ada'\ndense_macs_per_tc_per_cycle = { fp4 = 1 }", "key must be one of"),
        ("key = 'x12'\nname = 'x'\narch = 'ada'\ncompute_capability = '8'", "compute_capability must be 'MAJOR.MINOR'"),
        ("this is not toml", "must be valid TOML, got an error"),
    ],
)
def test_bad_files_are_refused_field_by_field(tmp_path, text, needle):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        gpus.load(str(p))
    msg = str(e.value)
    assert needle in msg and str(p) in msg and "\n" not in msg, msg


@pytest.mark.parametrize(
    "path, needle", [("nope.toml", "got 'nope.toml' \\(no such file\\)"), ("gpu.yaml", "ending in .toml or .json")]
)
def test_paths_are_checked(path, needle):
    with pytest.raises(InputError, match=needle):
        gpus.load(path)


def test_the_same_key_with_other_figures_is_refused(tmp_path, l4):
    gpus.load(l4)
    gpus.load(l4)  # the same file again: fine
    other = tmp_path / "other.toml"
    other.write_text(L4_TOML.replace("sms = 58", "sms = 60"))
    with pytest.raises(InputError, match="already loaded with other figures"):
        gpus.load(str(other))


@pytest.mark.parametrize("kind", ["gemm", "attention", "decode", "moe", "ffn"])
def test_every_report_runs_on_a_gpu_file(l4, kind, capsys):
    rc, out, err = cli(["explain", kind, "--gpu", l4, "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out, parse_constant=lambda c: pytest.fail(c))
    assert d["gpu"]["key"] == "my-l4" and d["gpu"]["arch"] == "ada"
    assert any(f"user file {l4}" in v["source"] for v in d["gpu"]["figures"].values())
    rc, text, _ = cli(["explain", kind, "--gpu", l4], capsys)
    assert rc == 0 and "wgmma's" not in text  # an Ada GPU's report speaks of mma.sync


def test_occupancy_and_gpus_take_a_file(l4, capsys):
    rc, out, _ = cli(["occupancy", "--gpu", l4, "--threads", "256", "--registers", "64", "--json"], capsys)
    assert rc == 0 and json.loads(out)["gpu"] == "my-l4"
    rc, out, _ = cli(["gpus", l4], capsys)
    assert rc == 0 and "NVIDIA L4 (my datasheet)" in out and f"user file {l4}" in out


def test_advise_on_a_gpu_file_says_datasheet_only(l4, capsys):
    rc, out, err = cli(["advise", "gemm", "--m", "512", "--n", "512", "--k", "512", "--gpu", l4], capsys)
    assert rc == 0, err
    assert "datasheet-only, not calibrated" in out.splitlines()[0]
    rc, out, _ = cli(["advise", "gemm", "--m", "512", "--n", "512", "--k", "512", "--gpu", l4, "--json"], capsys)
    d = json.loads(out)
    assert d["gpu"] == "my-l4" and "datasheet-only" in d["status"]
    assert all(a["prediction"]["calibrated"] is False for a in d["advice"])


def test_a_bad_gpu_file_is_one_line_exit_2(tmp_path, capsys):
    p = tmp_path / "bad.toml"
    p.write_text("key = 'zz'\nname = 'z'\narch = 'ada'\nsms = 0\n")
    rc, _, err = cli(["explain", "gemm", "--gpu", str(p)], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "sms must be an integer >= 1, got 0" in err


def test_the_explorer_lists_registry_and_loaded_gpus(l4):
    from tilewise.web import api

    gpus.load(l4)
    keys = [g["key"] for g in api.gpus_list()["gpus"]]
    assert {"l40s", "rtx-4090", "h20", "gh200", "h100-nvl", "my-l4"} <= set(keys)
    json.dumps(api.gpus_list(), allow_nan=False)


def test_a_request_cannot_make_the_explorer_read_a_file(l4):
    # only the command line resolves paths: a name that looks like a path is an unknown GPU to `get`
    with pytest.raises(InputError, match="unknown GPU"):
        gpus.get("/etc/some.toml")


# ------------------------------------------------------------------ the Ada and Hopper entries


@pytest.mark.parametrize(
    "key, tflops_bf16, tbps",
    [
        ("l40s", 362.05, 0.864),
        ("rtx-4090", 165.2, 1.008),
        ("h20", 148, 4.0),
        ("gh200", 989.4, 4.9),
        ("h100-nvl", 835, 3.9),
    ],
)
def test_new_entries_match_their_datasheets(key, tflops_bf16, tbps):
    g = gpus.get(key)
    assert gpus.peak_flops(g, "bf16") / 1e12 == pytest.approx(tflops_bf16, rel=0.003)
    assert g.hbm_bytes_per_s / 1e12 == pytest.approx(tbps)
    assert "http" in g.source("memory_bytes") or "http" in g.source("*")  # a datasheet URL


@pytest.mark.parametrize("key", ["l40s", "rtx-4090"])
def test_ada_reports_say_it_has_no_wgmma_or_tma(key):
    from tilewise.explain import attention, moe

    g = gpus.get(key)
    assert (g.arch, g.compute_capability, g.wgmma, g.tma) == ("ada", (8, 9), False, False)
    text = " ".join(attention.explain(gpu=key).render(10_000).split())
    assert "is Ada: mma.sync" in text and "no TMA, no wgmma, no setmaxnreg" in text
    assert "No setmaxnreg on Ada" in text
    # 160 KB of K/V stages cannot launch with Ada's 99 KB per block: the report says so instead of "fits"
    assert "the block does not launch (at most 99 KB per block" in text
    assert "has no wgmma" in " ".join(moe.explain(gpu=key).render(10_000).split())
