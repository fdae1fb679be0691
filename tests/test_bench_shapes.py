"""Every `tilewise bench` suite takes the user's own shapes: the parsing, its errors and the CLI's exit code (CPU)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tilewise import cli
from tilewise.bench import shapes
from tilewise.bench.suites import attention, decode, gemm, grouped, moe
from tilewise.bench.suites import sum as sum_suite
from tilewise.errors import InputError

SUITES = Path(shapes.__file__).parent / "suites"


# ----------------------------------------------------------------------------------- fields


def test_count_takes_k_suffix_and_refuses_the_rest():
    assert shapes.count("--x", "L", "32k") == 32768
    assert shapes.count("--x", "L", " 7 ") == 7
    for bad in ("0", "-3", "1.5", "k", "12m", ""):
        with pytest.raises(InputError, match="--x: L must be"):
            shapes.count("--x", "L", bad)


def test_int_list():
    assert shapes.int_list("--tokens", "4096, 16k") == [4096, 16384]
    with pytest.raises(InputError, match="--tokens"):
        shapes.int_list("--tokens", " , ")
    with pytest.raises(InputError, match="--tokens: each value"):
        shapes.int_list("--tokens", "4096,abc")


# ------------------------------------------------------------------------------------ decode


def test_decode_presets_and_row_numbers_unchanged():
    assert decode.parse_shapes("all") == decode.SHAPES
    assert decode.parse_shapes("0,4") == [decode.SHAPES[0], decode.SHAPES[4]]
    # The preset's variable-length batch: 32 lengths evenly spaced over 1k..64k, both ends included.
    assert decode.VARLEN[0] == 1024 and decode.VARLEN[-1] == 65536 and len(decode.VARLEN) == 32
    assert decode.parse_shapes("32,32,8,1k-64k") == [("B32 Hq32 Hkv8 varlen 1k-64k", 32, 8, decode.VARLEN)]


def test_decode_own_shapes():
    assert decode.parse_shapes("4,32,8,16k") == [("B4 Hq32 Hkv8 L16k", 32, 8, [16384] * 4)]
    (name, hq, hk, lens), (name2, _, _, lens2) = decode.parse_shapes("3,64,8,1000/70000/9000; 1,8,8,777")
    assert (hq, hk, lens) == (64, 8, [1000, 70000, 9000]) and "varlen" in name
    assert lens2 == [777] and name2 == "B1 Hq8 Hkv8 L777"
    assert shapes.even_lengths(1, 5, 9) == [9]
    assert shapes.even_lengths(3, 10, 20) == [10, 15, 20]


@pytest.mark.parametrize(
    "bad, match",
    [
        ("7", "B,Hq,Hkv,L"),  # not a preset row (0..6), and not a shape
        ("4,32,7,16k", "Hq must be a multiple of Hkv"),
        ("4,32,8", "B,Hq,Hkv,L"),
        ("2,32,8,100/200/300", "B is 2 but 3 lengths"),
        ("2,32,8,9k-1k", "LOW-HIGH"),
        ("2,32,8,0", "L must be"),
        ("0,32,8,128", "B must be"),
        (";", "no shape"),
    ],
)
def test_decode_bad_shapes(bad, match):
    with pytest.raises(InputError, match=match):
        decode.parse_shapes(bad)


# ------------------------------------------------------------------------------------ grouped


def test_grouped_presets_keep_their_rows():
    (label, counts, k, n), *_ = grouped.parse_shapes("e128_r8")
    assert (label, counts, k, n) == ("E128 rows8 K2048 N1536 (T 1024)", [8] * 128, 2048, 1536)
    ((label, counts, _, _),) = grouped.parse_shapes("e128_zipf")
    assert len(counts) == 128 and sum(counts) == 16384 and max(counts) > 10 * min(counts)
    assert label == "E128 rowszipf K2048 N1536 (T 16384)"
    assert len(grouped.parse_shapes(",".join(grouped.SHAPES))) == len(grouped.SHAPES)


def test_grouped_own_shapes():
    got = grouped.parse_shapes("64,256,4096,1024; 3,5/0/7,128,64; 60,zipf32,2048,1408; e16_r1024")
    assert got[0] == ("E64 rows256 K4096 N1024 (T 16384)", [256] * 64, 4096, 1024)
    assert got[1][1:] == ([5, 0, 7], 128, 64)
    assert len(got[2][1]) == 60 and sum(got[2][1]) == 60 * 32
    assert got[3][1] == [1024] * 16


@pytest.mark.parametrize(
    "bad, match",
    [
        ("e999", "expected names of"),
        ("64,256,4096", "E,R,K,N"),
        ("3,5/0,128,64", "E is 3 but 2"),
        ("2,0/0,128,64", "every expert has 0 rows"),
        ("2,1/-1,128,64", ">= 0"),
        ("2,x/1,128,64", "integers >= 0"),
        ("4,8,0,64", "K must be"),
    ],
)
def test_grouped_bad_shapes(bad, match):
    with pytest.raises(InputError, match=match):
        grouped.parse_shapes(bad)


# ---------------------------------------------------------------------------------------- moe


def test_moe_presets_and_own_shapes():
    assert moe.parse_configs("qwen3_t512,dsv3_t512") == [
        ("qwen3_t512", *moe.CONFIGS["qwen3_t512"]),
        ("dsv3_t512", *moe.CONFIGS["dsv3_t512"]),
    ]
    (name, *p), (_, *q) = moe.parse_configs("8192,4096,1536,64,6; 2k,7168,2048,256,8,sigmoid")
    assert p == [8192, 4096, 1536, 64, 6, "softmax"] and name == "T8192_d4096_f1536_E64_k6"
    assert q == [2048, 7168, 2048, 256, 8, "sigmoid"]


@pytest.mark.parametrize(
    "bad, match",
    [("qwen4", "expected names of"), ("8,8,8,4,6", "top-k must be at most"), ("8,8,8,8,2,relu", "gate must be")],
)
def test_moe_bad_shapes(bad, match):
    with pytest.raises(InputError, match=match):
        moe.parse_configs(bad)


# ------------------------------------------------------------------------- attention, gemm, ffn


def test_attention_own_shapes_and_checks():
    assert attention.parse_shapes("headline") == attention.HEADLINE
    assert attention.parse_shapes("1,32,8,8k,128,1;2,16,16,100,64,0") == [
        (1, 32, 8, 8192, 128, True),
        (2, 16, 16, 100, 64, False),
    ]
    for bad, match in [
        ("1,32,8,128,96,1", "D must be one of"),
        ("1,32,5,128,64,1", "multiple of Hkv"),
        ("1,32,8,128,64,2", "causal must be 0 or 1"),
        ("1,32,8,128,64", "B,H,Hkv,S,D,causal"),
    ]:
        with pytest.raises(InputError, match=match):
            attention.parse_shapes(bad)


def test_gemm_semicolons_too():
    assert gemm.parse_shapes("1x2x3;4x5x6") == [(1, 2, 3), (4, 5, 6)]


def test_mhmoe_shapes():
    assert shapes.mhmoe("4096,16,128,8,256,2;2048,32,64,16,128,1") == [
        (4096, 16, 128, 8, 256, 2),
        (2048, 32, 64, 16, 128, 1),
    ]
    with pytest.raises(InputError, match="top-k must be at most"):
        shapes.mhmoe("4096,16,128,2,256,3")


# ------------------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "decode", "--shapes", "4,32,7,16k"], "Hq must be a multiple of Hkv"),
        (["bench", "grouped", "--shapes", "64,zipf32,2048,x"], "N must be a positive integer"),
        (["bench", "moe", "--configs", "8,8,8,4,6"], "top-k must be at most"),
        (["bench", "ffn", "--tokens", "12,abc"], "--tokens: each value"),
        (["bench", "ffn", "--part", "moe", "--moe-shapes", "1,2,3"], "T,H,d_h,E,f,k"),
        (["bench", "ffn", "--moe-topk", "9"], "--moe-topk must be at most --moe-experts"),
        (["bench", "attention", "--shapes", "1,32,8,128,96,1"], "D must be one of"),
        (["bench", "gemm", "--shapes", "1x2"], "MxNxK"),
        (["bench", "sum", "--cols", "0"], "--cols"),
        (["bench", "sum", "--sizes", "1G:diag"], "'rows' or 'cols'"),
    ],
)
def test_bad_shapes_exit_2_with_one_line_before_any_gpu_check(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert message in err and "CUDA" not in err


def test_every_suite_checks_its_arguments_and_shows_examples():
    from tilewise.bench import cli as bench_cli

    suites = bench_cli._suites()
    assert {"gemm", "sum", "attention", "decode", "grouped", "moe", "ffn"} <= set(suites)
    for name in ("gemm", "sum", "attention", "decode", "grouped", "moe", "ffn"):
        mod = suites[name]
        assert callable(mod.check), name
        assert f"tilewise bench {name} " in mod.EXAMPLES, name


def test_suites_do_not_import_each_other():
    for path in sorted(SUITES.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for n in names:
                assert not n.startswith("tilewise.bench.suites"), f"{path.name} imports {n}"


def test_parsing_needs_no_torch():
    code = (
        "import sys; from tilewise.bench import shapes; "
        "from tilewise.bench.suites import attention, decode, ffn, gemm, grouped, moe, sum; "
        "decode.parse_shapes('4,32,8,16k'); grouped.parse_shapes('4,8,64,64'); "
        "print('torch' in sys.modules or 'triton' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_shared_helpers_live_in_shapes():
    assert gemm.rotation is shapes.rotation and sum_suite.rotation is shapes.rotation
    assert grouped.model_columns is shapes.grouped_schedule_columns
