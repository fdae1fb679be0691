"""The GPU registry: seed figures, derived functions, sources, aliases, detect()."""

import json

import pytest

from tilewise import gpus
from tilewise.cli import main
from tilewise.errors import InputError


def test_required_entries_and_aliases():
    keys = gpus.names()
    for k in ("h100-sxm", "h100-pcie", "h200", "a100-sxm", "b200"):
        assert k in keys
    assert gpus.get("h100").key == "h100-sxm"
    assert gpus.get("H100_SXM").key == "h100-sxm"
    assert gpus.get("a100").key == "a100-sxm"
    assert gpus.get("h200-sxm").key == "h200"
    assert [g.key for g in gpus.list()] == keys


def test_seed_figures_h100():
    h = gpus.get("h100-sxm")
    # 4096 FLOPs per cycle per SM = 2048 MACs = 512 per Tensor Core x 4
    assert gpus.tensor_flops_per_cycle_per_sm(h, "bf16") == 4096
    assert h.dense_macs_per_tc_per_cycle["bf16"] == 512 and h.tensor_cores_per_sm == 4
    # 528 Tensor Cores in an H100
    assert h.tensor_cores_per_sm * h.sms == 528
    # 989.4 TFLOPS = 4096 x 132 x 1.83e9
    assert gpus.peak_flops(h, "bf16") == pytest.approx(989.4e12, rel=1e-4)
    # balance 989.4 / 3.35 ~ 295
    assert round(gpus.balance(h, "hbm", "bf16")) == 295
    # shared memory: 256 KB SRAM, 228 KB shared, 227 KB per block, 48 KB default
    assert h.l1_smem_bytes_per_sm == 256 * 1024
    assert h.smem_per_sm == 228 * 1024 and h.smem_per_block_optin == 227 * 1024
    assert h.smem_per_block_default == 48 * 1024
    # occupancy limits: 65,536 registers, 64 warps, 32 blocks
    assert (h.regs_per_sm, h.max_warps_per_sm, h.max_blocks_per_sm) == (65536, 64, 32)
    # 128 B per cycle of shared memory: ~30 TB/s over the chip (32 banks x 4 B x 132 SMs x 1.83 GHz)
    assert gpus.bandwidth(h, "smem") == pytest.approx(30.9e12, rel=0.01)


def test_clock_scaling_and_fp8_tf32():
    h = gpus.get("h100-sxm")
    assert gpus.peak_flops(h, "bf16", clock_mhz=1000) == 4096 * 132 * 1e9
    assert gpus.tensor_flops_per_cycle_per_sm(h, "fp8") == 8192
    assert gpus.tensor_flops_per_cycle_per_sm(h, "tf32") == 2048
    # a slower clock gives each cycle more HBM bytes: the balance drops
    assert gpus.balance(h, "hbm", "bf16", clock_mhz=1500) < gpus.balance(h, "hbm", "bf16")


def test_h200_matches_the_device_it_was_measured_on():
    props = json.load(open("tests/data/h200_props.json"))["torch"]
    h = gpus.get("h200")
    assert h.sms == props["multi_processor_count"]
    assert h.l2_bytes == props["L2_cache_size"]
    assert h.smem_per_sm == props["shared_memory_per_multiprocessor"]
    assert h.smem_per_block_optin == props["shared_memory_per_block_optin"]
    assert h.smem_per_block_default == props["shared_memory_per_block"]
    assert h.regs_per_sm == props["regs_per_multiprocessor"]
    assert h.max_threads_per_sm == props["max_threads_per_multi_processor"]
    assert h.max_clock_mhz * 1000 == props["clock_rate"]
    # same compute as the H100, lower balance (more bandwidth)
    assert gpus.peak_flops(h) == gpus.peak_flops(gpus.get("h100-sxm"))
    assert gpus.balance(h) < gpus.balance(gpus.get("h100-sxm"))


def test_a100_and_b200_derived():
    a = gpus.get("a100-sxm")
    assert gpus.peak_flops(a, "bf16") == pytest.approx(312e12, rel=0.01)
    b = gpus.get("b200")
    assert gpus.peak_flops(b, "bf16") == pytest.approx(2.25e15, rel=0.01)
    assert b.tcgen05 and not b.wgmma and gpus.get("h100").wgmma


def test_every_figure_has_a_source():
    for g in gpus.list():
        d = g.to_dict()
        for field in ("sms", "hbm_bytes_per_s", "l2_bytes", "smem_per_sm", "tensor_clock_mhz", "regs_per_sm"):
            assert g.source(field) and g.source(field) != "unspecified", (g.key, field)
        assert d["derived"]["peak_tflops"]["bf16"] > 100


def test_bad_names():
    with pytest.raises(InputError, match="unknown GPU 'rtx9090'; expected one of: a100-sxm, b200"):
        gpus.get("rtx9090")
    with pytest.raises(InputError, match="dtype must be one of"):
        gpus.peak_flops(gpus.get("h100"), "fp4")
    with pytest.raises(InputError, match="has no Tensor-Core rate for fp8"):
        gpus.peak_flops(gpus.get("a100"), "fp8")
    with pytest.raises(InputError, match="level must be one of"):
        gpus.bandwidth(gpus.get("h100"), "l3")


def test_detect_says_plainly_when_there_is_no_device():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        g = gpus.detect()
        assert g.sms > 0 and "detected" in g.source("sms")
    else:
        with pytest.raises(gpus.NoDeviceError, match="needs a CUDA device"):
            gpus.detect()


def test_cli_gpus(capsys):
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    assert "h100-sxm" in out and "989.4" in out and "295" in out
    assert main(["gpus", "h200", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["key"] == "h200" and d["sms"] == 132 and d["sources"]["l2_bytes"].startswith("measured on an H200")
    assert main(["gpus", "h100"]) == 0
    assert "4096 FLOPs/cycle/SM" in capsys.readouterr().out
    assert main(["gpus", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tilewise: error: unknown GPU 'nope'") and "Traceback" not in err


def test_key_for_device_names_as_cuda_reports_them():
    assert gpus.key_for_device("NVIDIA H200") == "h200"
    assert gpus.key_for_device("NVIDIA H100 80GB HBM3") == "h100-sxm"
    assert gpus.key_for_device("NVIDIA H100 PCIe") == "h100-pcie"
    assert gpus.key_for_device("NVIDIA A100-SXM4-80GB") == "a100-sxm"
    assert gpus.key_for_device("NVIDIA B200") == "b200"
    # an unknown model: the nearest by SM count when it is known
    assert gpus.key_for_device("Some Future GPU", sms=116) == "h100-pcie"
    assert gpus.key_for_device("Some Future GPU", sms=110) == "a100-sxm"
    assert gpus.key_for_device("Some Future GPU") == "h100-sxm"
