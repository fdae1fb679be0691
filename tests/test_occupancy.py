"""Occupancy against the CUDA runtime: every row of a fixture recorded on an H200.

tests/data/occupancy/make_fixture.py compiled kernels with many register counts, static
shared sizes and named-barrier counts, swept block size, dynamic shared memory, the
carveout preference and the max-dynamic-shared-memory attribute, and recorded what
cudaOccupancyMaxActiveBlocksPerMultiprocessor answered.
"""

import csv
import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilewise
from tilewise.errors import InputError

DATA = Path(__file__).parent / "data" / "occupancy"


def _rows():
    with gzip.open(DATA / "h200.csv.gz", "rt") as f:
        return list(csv.DictReader(f))


def test_fixture_agrees_with_runtime_on_every_row():
    rows = _rows()
    assert len(rows) >= 10_000
    mismatches = []
    for r in rows:
        assert r["status"] == "0", r  # the runtime answered every query
        carveout = None if int(r["carveout"]) == -1 else int(r["carveout"])
        o = tilewise.occupancy(
            "h200",
            threads=int(r["threads"]),
            registers=int(r["num_regs"]),
            static_smem=int(r["static_smem"]),
            dynamic_smem=int(r["dynamic_smem"]),
            carveout=carveout,
            max_dynamic_smem=int(r["max_dynamic_smem"]),
            barriers=int(r["barriers"]),
        )
        if o.blocks_per_sm != int(r["blocks"]):
            mismatches.append((r, o.blocks_per_sm))
    assert not mismatches, f"{len(mismatches)} of {len(rows)} rows differ, e.g. {mismatches[:3]}"


def test_fixture_covers_the_space():
    rows = _rows()
    regs = {int(r["num_regs"]) for r in rows}
    assert min(regs) <= 32 and max(regs) >= 200
    assert {int(r["barriers"]) for r in rows} >= {1, 4, 8, 16}
    assert {int(r["carveout"]) for r in rows} >= {-1, 0, 50, 100}
    limiters = set()
    for r in rows[::97]:
        carveout = None if int(r["carveout"]) == -1 else int(r["carveout"])
        o = tilewise.occupancy(
            "h200",
            int(r["threads"]),
            int(r["num_regs"]),
            int(r["static_smem"]),
            int(r["dynamic_smem"]),
            carveout,
            int(r["max_dynamic_smem"]),
            int(r["barriers"]),
        )
        limiters.add(o.limiter)
    # the fixture exercises every limit
    assert limiters >= {"warps", "registers", "shared_memory", "blocks", "barriers"}
    meta = json.loads((DATA / "h200.meta.json").read_text())
    assert meta["rows"] == len(rows)


def test_seed_four_limits():
    # Hopper's limits: registers 65,536 per SM, warps 64, blocks 32.
    o = tilewise.occupancy("h100-sxm", threads=32, registers=16)
    assert o.limits["blocks"] == 32 and o.blocks_per_sm == 32 and o.limiter == "blocks"
    o = tilewise.occupancy("h100-sxm", threads=1024, registers=32)
    assert o.limits["warps"] == 2 and o.warps_per_sm == 64 and o.occupancy == 1.0
    # 65,536 registers: 256 threads x 128 registers = 32,768 -> 2 blocks
    o = tilewise.occupancy("h100-sxm", threads=256, registers=128)
    assert o.blocks_per_sm == 2 and o.limiter == "registers"


def test_flashattention_like_block_is_alone_on_its_sm():
    # FlashAttention: one block takes most of shared memory, so only one fits per SM.
    o = tilewise.occupancy("h100-sxm", threads=384, registers=168, dynamic_smem=200 * 1024)
    assert o.blocks_per_sm == 1 and "shared_memory" in o.limiters and "registers" in o.limiters
    # 227 KB is the most one block may have; with the reserved 1 KB it fills the 228 KB SM
    o = tilewise.occupancy("h100-sxm", threads=128, registers=32, dynamic_smem=227 * 1024)
    assert o.blocks_per_sm == 1 and o.smem_per_block == 228 * 1024


def test_register_rounding_and_subpartitions():
    # 33 registers -> 33*32 = 1056 -> rounded to 1280 per warp; 16384/1280 = 12 warps per
    # sub-partition, 48 per SM -> 48 / 8 warps = 6 blocks of 256 threads
    o = tilewise.occupancy("h100-sxm", threads=256, registers=33)
    assert o.registers_per_block == 1280 * 8
    assert o.limits["registers"] == 6
    # 255 registers x 288 threads: 9 warps, rounded up to 12 for the hardware check -> does not fit
    o = tilewise.occupancy("h100-sxm", threads=288, registers=255)
    assert o.blocks_per_sm == 0 and o.notes


def test_carveout_rounds_up_to_supported_size():
    # 10% of 228 KB = 22.8 KB -> the SM is configured to 32 KB; 8 KB blocks (9 KB with reserve) -> 3
    o = tilewise.occupancy("h100-sxm", threads=64, registers=32, dynamic_smem=8 * 1024, carveout=10)
    assert o.smem_per_sm_config == 32 * 1024 and o.limits["shared_memory"] == 3


@settings(max_examples=300, deadline=None)
@given(
    threads=st.integers(1, 1024),
    registers=st.integers(0, 255),
    smem=st.integers(0, 227 * 1024),
    carveout=st.one_of(st.none(), st.integers(0, 100)),
)
def test_properties(threads, registers, smem, carveout):
    o = tilewise.occupancy("h200", threads, registers, 0, smem, carveout)
    assert 0 <= o.blocks_per_sm <= 32
    assert o.blocks_per_sm == min(o.limits.values())
    assert 0.0 <= o.occupancy <= 1.0
    assert o.warps_per_sm <= 64
    # more registers never allow more blocks
    if registers < 255:
        assert tilewise.occupancy("h200", threads, registers + 1, 0, smem, carveout).blocks_per_sm <= o.blocks_per_sm
    # more shared memory never allows more blocks
    if smem + 4096 <= 227 * 1024:
        assert tilewise.occupancy("h200", threads, registers, 0, smem + 4096, carveout).blocks_per_sm <= o.blocks_per_sm


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(threads=1025, registers=32), "threads must be an integer <= 1024, got 1025"),
        (dict(threads=0, registers=32), "threads must be an integer >= 1, got 0"),
        (dict(threads=128, registers=256), "registers must be an integer <= 255, got 256"),
        (dict(threads=128, registers=32, static_smem=49153), "static_smem must be an integer <= 49152"),
        (dict(threads=128, registers=32, dynamic_smem=300_000), "dynamic_smem must be at most"),
        (dict(threads=128, registers=32, carveout=101), "carveout must be an integer <= 100"),
        (dict(threads=128.5, registers=32), "threads must be an integer"),
        (dict(threads=128, registers=32, barriers=17), "barriers must be an integer <= 16"),
    ],
)
def test_bad_input(kwargs, needle):
    with pytest.raises(InputError, match=needle.replace("(", r"\(")):
        tilewise.occupancy("h100-sxm", **kwargs)
    with pytest.raises(ValueError):  # InputError is a ValueError for the Python API
        tilewise.occupancy("h100-sxm", **kwargs)


def test_unknown_gpu():
    with pytest.raises(InputError, match="unknown GPU 'h300'; expected one of"):
        tilewise.occupancy("h300", 128, 32)
