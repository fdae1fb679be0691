"""Property-based fuzzing of every CLI command.

Each example builds an argv for `tilewise explain KIND`, `occupancy`, `gpus` or `trace` (with the
bundled examples) from values a user might type -- good ones, boundaries, huge and negative
numbers, words, floats -- and runs `tilewise.cli.main` in-process. The properties:

* the exit status is 0 or 2, and no exception but argparse's SystemExit escapes;
* the call finishes (a limit that only says "it hung": ~50x what a report needs on a loaded 2-core
  machine, longer for a simulated trace);
* every `--json` output is strict JSON (NaN and Infinity rejected);
* a refusal by tilewise is one line, "tilewise: error: ...", naming what was expected and what
  was given; an argparse refusal ends in its "error:" line.

Examples are derandomized so CI runs the same cases every time; the whole file takes well under
a minute on 2 cores.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import time
from pathlib import Path

# Imported once here so the per-call limit measures tilewise, not matplotlib's one-time import
# (~1 s cold) that `occupancy --plot` needs to know the image formats.
import matplotlib.backend_bases  # noqa: E402, F401
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilewise import gpus
from tilewise.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "sim"
# Hang guards in CPU seconds of this process, >= 10x what a call needs (a report: < 0.1 s; a traced
# example: < 3 s; `gpus --detect` imports torch first, 3-4 s): speed is measured by benchmarks, not here.
REPORT_LIMIT_S = 10.0
TRACE_LIMIT_S = 60.0
DETECT_LIMIT_S = 60.0

FUZZ = settings(
    max_examples=80,
    deadline=None,  # the time limit is asserted below, per call, with a clear message
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _strict(text: str):
    def bad(c):
        raise AssertionError(f"non-strict JSON constant {c!r}")

    return json.loads(text, parse_constant=bad)


# A refusal of an input names what was expected and what was given.
EXPECTED_VS_GIVEN = r"\bgot\b|expected|must|unknown"
# An error in a user's kernel file names the file (or kernel) and the line.
FILE_AND_LINE = r"\.py:\d+|line \d+|\.py: |\.py defines no"


OUTCOMES: dict[str, list[int]] = {}


@pytest.fixture(autouse=True, scope="module")
def _forget_user_gpus():
    """`--gpu FILE` adds the file's GPU to the process's registry: it leaves with this module."""
    yield
    for g in gpus.list():
        if gpus.is_user(g):
            gpus.forget(g.key)


def run_cli(argv: list[str], limit_s: float = REPORT_LIMIT_S, message: str = EXPECTED_VS_GIVEN) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    t = time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse: --help (0) or a usage error (2)
            rc = e.code if isinstance(e.code, int) else 2
    took = time.process_time() - t
    o, e = out.getvalue(), err.getvalue()
    OUTCOMES.setdefault(" ".join(argv[:2]), []).append(rc)
    assert took <= limit_s, f"{argv} hung: {took:.2f} s (limit {limit_s} s)"
    assert rc in (0, 2), (argv, rc, e[-500:])
    assert "Traceback" not in e, (argv, e)
    if rc == 0 and "--json" in argv:
        _strict(o)
    if rc == 2:
        lines = e.strip().splitlines()
        assert lines, (argv, "exit 2 without a message")
        if lines[-1].startswith("tilewise: error:"):
            assert len(lines) == 1, (argv, e)
            msg = lines[0]
            assert re.search(message, msg), (argv, msg)
        else:
            assert "error:" in lines[-1], (argv, e)  # argparse names the argument and the bad value
    return rc, o, e


# ------------------------------------------------------------------ values a user might type

INTS = st.one_of(
    st.integers(min_value=-3, max_value=300),
    st.sampled_from([0, 1, 7, 8, 15, 16, 63, 64, 100, 127, 128, 255, 256, 257, 1000, 4096, 65536]),
    st.sampled_from([10**9, 10**12, 10**18, 10**40, 10**310, -(10**20)]),
)
JUNK = st.sampled_from(["", "abc", "1.5", "1e3", "nan", "inf", "-0", "0x10", "64x128", " 64", "٣"])
# Half the draws are sizes a real problem has, so the reports' success paths get fuzzed too.
PLAUSIBLE = st.sampled_from(["1", "2", "4", "8", "16", "32", "64", "128", "256", "1024", "4096", "8192"])
NUMBER_TEXT = st.one_of(PLAUSIBLE, st.one_of(INTS.map(str), JUNK))
USER_GPU = Path(__file__).resolve().parent / "data" / "gpus" / "my-l4.toml"  # a user's own GPU file
GPU_TEXT = st.one_of(
    st.sampled_from(gpus.names() + ["h100", "a100", "blackwell", str(USER_GPU)]),
    st.sampled_from(["h300", "", "missing.toml", "x.json"]),
)
DTYPE_TEXT = st.sampled_from(["bf16", "fp16", "tf32", "fp8", "int8", "fp32", "float4", "bfloat16"])

OPTIONS = {
    "gemm": {
        "--m": NUMBER_TEXT,
        "--n": NUMBER_TEXT,
        "--k": NUMBER_TEXT,
        "--tile": st.one_of(st.sampled_from(["64x128", "128x256", "16x16", "7x9", "300x64", "x", "64"]), JUNK),
        "--block-k": NUMBER_TEXT,
        "--threads": NUMBER_TEXT,
        "--stages": NUMBER_TEXT,
        "--registers": NUMBER_TEXT,
        "--dtype": DTYPE_TEXT,
        "--gpu": GPU_TEXT,
    },
    "attention": {
        "--batch": NUMBER_TEXT,
        "--heads": NUMBER_TEXT,
        "--kv-heads": NUMBER_TEXT,
        "--seq-q": NUMBER_TEXT,
        "--seq-k": NUMBER_TEXT,
        "--head-dim": NUMBER_TEXT,
        "--block-m": NUMBER_TEXT,
        "--consumers": NUMBER_TEXT,
        "--block-n": NUMBER_TEXT,
        "--stages": NUMBER_TEXT,
        "--dtype": DTYPE_TEXT,
        "--gpu": GPU_TEXT,
        "--hit-rate": st.sampled_from(["0", "0.5", "1", "1.5", "-0.1", "nan", "inf", "x"]),
    },
    "decode": {
        "--batch": NUMBER_TEXT,
        "--heads": NUMBER_TEXT,
        "--kv-heads": NUMBER_TEXT,
        "--seq-len": NUMBER_TEXT,
        "--head-dim": NUMBER_TEXT,
        "--block-n": NUMBER_TEXT,
        "--dtype": DTYPE_TEXT,
        "--gpu": GPU_TEXT,
    },
    "moe": {
        "--experts": NUMBER_TEXT,
        "--tokens": NUMBER_TEXT,
        "--top-k": NUMBER_TEXT,
        "--d-model": NUMBER_TEXT,
        "--d-ff": NUMBER_TEXT,
        "--heads": NUMBER_TEXT,
        "--block-m": NUMBER_TEXT,
        "--block-n": NUMBER_TEXT,
        "--block-k": NUMBER_TEXT,
        "--dtype": DTYPE_TEXT,
        "--gpu": GPU_TEXT,
    },
    "ffn": {
        "--tokens": NUMBER_TEXT,
        "--d-model": NUMBER_TEXT,
        "--heads": NUMBER_TEXT,
        "--intermediate": NUMBER_TEXT,
        "--block-m": NUMBER_TEXT,
        "--block-n": NUMBER_TEXT,
        "--dtype": DTYPE_TEXT,
        "--gpu": GPU_TEXT,
    },
}
FLAGS = {"attention": ["--causal"]}


@st.composite
def explain_argv(draw, kind: str) -> list[str]:
    opts = OPTIONS[kind]
    chosen = draw(st.lists(st.sampled_from(sorted(opts)), unique=True, max_size=4))
    argv = ["explain", kind]
    for name in chosen:
        argv += [name, draw(opts[name])]
    for flag in FLAGS.get(kind, []):
        if draw(st.booleans()):
            argv.append(flag)
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@settings(FUZZ)
@given(explain_argv("gemm"))
def test_fuzz_explain_gemm(argv):
    run_cli(argv)


@settings(FUZZ)
@given(explain_argv("attention"))
def test_fuzz_explain_attention(argv):
    run_cli(argv)


@settings(FUZZ)
@given(explain_argv("decode"))
def test_fuzz_explain_decode(argv):
    run_cli(argv)


@settings(FUZZ)
@given(explain_argv("moe"))
def test_fuzz_explain_moe(argv):
    run_cli(argv)


@settings(FUZZ)
@given(explain_argv("ffn"))
def test_fuzz_explain_ffn(argv):
    run_cli(argv)


SIZE_TEXT = st.one_of(
    st.sampled_from(["0", "48K", "227K", "228K", "1M", "0x100", "4096", "-1", "1.5K", "abc", "10G", str(10**40)]),
    INTS.map(str),
)


@st.composite
def occupancy_argv(draw) -> list[str]:
    argv = ["occupancy", "--threads", draw(NUMBER_TEXT), "--registers", draw(NUMBER_TEXT)]
    optional = {
        "--gpu": GPU_TEXT,
        "--smem": SIZE_TEXT,
        "--static-smem": SIZE_TEXT,
        "--carveout": NUMBER_TEXT,
        "--max-dynamic-smem": SIZE_TEXT,
        "--barriers": NUMBER_TEXT,
        "--plot": st.sampled_from(["x.txt", "/nonexistent/dir/x.png", "noext"]),  # refused before any write
    }
    for name in draw(st.lists(st.sampled_from(sorted(optional)), unique=True, max_size=4)):
        argv += [name, draw(optional[name])]
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@settings(FUZZ)
@given(occupancy_argv())
def test_fuzz_occupancy(argv):
    rc, _, err = run_cli(argv)
    if "--plot" in argv:
        assert rc == 2, (argv, err)  # every plot path drawn above is unwritable or not an image


@settings(FUZZ.__class__(FUZZ, max_examples=20))
@given(st.one_of(st.none(), GPU_TEXT, st.sampled_from(["--detect"])), st.booleans())
def test_fuzz_gpus(name, as_json):
    argv = ["gpus"]
    if name == "--detect":
        argv.append("--detect")  # no device here: a one-line refusal
    elif name is not None:
        argv.append(name)
    if as_json:
        argv.append("--json")
    run_cli(argv, limit_s=DETECT_LIMIT_S if "--detect" in argv else REPORT_LIMIT_S)


# ------------------------------------------------------------------ trace, with the bundled examples

TRACE_FILES = sorted(p.name for p in EXAMPLES.glob("*.py"))


@st.composite
def trace_argv(draw) -> list[str]:
    argv = ["trace", str(EXAMPLES / draw(st.sampled_from(TRACE_FILES)))]
    grid = draw(st.sampled_from([None, "1", "2,2", "2,1", "0", "-1", "a,b", "100000,100000"]))
    block = draw(st.sampled_from([None, "32", "16,16", "32,32", "8,8", "0", "2048", "x"]))
    if grid is not None:
        argv += ["--grid", grid]
    if block is not None:
        argv += ["--block", block]
    # bound the simulated work: huge grids are sampled down to one block
    argv += ["--sample", draw(st.sampled_from(["1", "2"]))]
    if draw(st.booleans()):
        argv += ["--seed", draw(st.sampled_from(["0", "1", "7"]))]
    if draw(st.booleans()):
        argv.append("--no-hazards")
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@settings(FUZZ.__class__(FUZZ, max_examples=12))
@given(trace_argv())
def test_fuzz_trace_bundled_examples(argv):
    run_cli(argv, limit_s=TRACE_LIMIT_S)


# ------------------------------------------------------------------ trace, with broken user files

BROKEN = {
    "syntax.py": "def oops(:\n",
    "kernel_raises.py": (
        "import numpy as np\nfrom tilewise.sim import *\n\n@kernel\ndef k(x):\n    x[threadIdx.x] = 1 // 0\n\n"
        "def setup(grid, block, rng):\n    return (np.zeros(64, dtype=np.float32),)\n"
    ),
    "setup_raises.py": (
        "from tilewise.sim import *\n\n@kernel\ndef k(x):\n    x[0] = 1\n\n"
        "def setup(grid, block, rng):\n    raise RuntimeError('bad setup')\n"
    ),
    "setup_wrong_type.py": (
        "from tilewise.sim import *\n\n@kernel\ndef k(x):\n    x[0] = 1\n\ndef setup(grid, block, rng):\n    return 5\n"
    ),
    "undefined_name.py": (
        "import numpy as np\nfrom tilewise.sim import *\n\n@kernel\ndef k(x):\n    x[0] = not_defined\n\n"
        "def setup(grid, block, rng):\n    return (np.zeros(64, dtype=np.float32),)\n"
    ),
    "endless.py": (
        "import numpy as np\nfrom tilewise.sim import *\n\n@kernel\ndef k(x):\n    while True:\n        x[0] = 1\n\n"
        "def setup(grid, block, rng):\n    return (np.zeros(64, dtype=np.float32),)\n"
    ),
    "no_kernel.py": "x = 1\n",
}


@pytest.fixture(scope="module")
def broken_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("broken_kernels")
    for name, text in BROKEN.items():
        (d / name).write_text(text)
    return d


@settings(FUZZ.__class__(FUZZ, max_examples=14))
@given(
    name=st.sampled_from(sorted(BROKEN)),
    grid=st.sampled_from(["1", "2"]),
    block=st.sampled_from(["32", "64"]),
    as_json=st.booleans(),
)
def test_fuzz_trace_broken_user_files(broken_dir, name, grid, block, as_json):
    path = broken_dir / name
    argv = ["trace", str(path), "--grid", grid, "--block", block, "--max-steps", "2000"]
    if as_json:
        argv.append("--json")
    rc, _, err = run_cli(argv, limit_s=TRACE_LIMIT_S, message=f"{EXPECTED_VS_GIVEN}|{FILE_AND_LINE}")
    assert rc == 2, (argv, err)  # every one of these files is broken: a one-line refusal naming it
    assert name in err or "kernel k" in err, err


@settings(FUZZ.__class__(FUZZ, max_examples=10))
@given(st.booleans())
def test_fuzz_explain_without_kind(as_json):
    rc, out, _ = run_cli(["explain", "--json"] if as_json else ["explain"])
    assert rc == 0 and ("192 blocks" in out or '"blocks": 192' in out)  # the decode GEMM: 192 blocks


# ------------------------------------------------------------------ advise

ADVISE_OPTIONS = {
    "--m": NUMBER_TEXT, "--n": NUMBER_TEXT, "--k": NUMBER_TEXT, "--batch": NUMBER_TEXT, "--heads": NUMBER_TEXT,
    "--kv-heads": NUMBER_TEXT, "--seq-q": NUMBER_TEXT, "--seq-k": NUMBER_TEXT, "--seq-len": NUMBER_TEXT,
    "--head-dim": st.sampled_from(["64", "128", "100", "x"]), "--experts": NUMBER_TEXT, "--rows": NUMBER_TEXT,
    "--dtype": DTYPE_TEXT, "--layout": st.sampled_from(["nn", "nt", "tt"]), "--gpu": GPU_TEXT,
    "--top": NUMBER_TEXT,
}  # fmt: skip


@st.composite
def advise_argv(draw) -> list[str]:
    argv = ["advise", draw(st.sampled_from(["gemm", "attention", "decode", "grouped"]))]
    for name in draw(st.lists(st.sampled_from(sorted(ADVISE_OPTIONS)), unique=True, max_size=3)):
        argv += [name, draw(ADVISE_OPTIONS[name])]
    for flag in ("--causal", "--per-problem", "--json"):
        if draw(st.booleans()) and draw(st.booleans()):
            argv.append(flag)
    return argv


@settings(FUZZ.__class__(FUZZ, max_examples=40))
@given(advise_argv())
def test_fuzz_advise(argv):
    rc, out, err = run_cli(argv)
    if rc == 0 and "--json" in argv:
        d = _strict(out)
        for v in d["problem"].values():  # echoed as the model read them: sizes are ints, not strings
            assert not isinstance(v, str) or not v.strip().isdigit(), d["problem"]
