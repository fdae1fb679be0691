"""Compile every pointer-kernel GEMM config of the advisor's grid for sm_90 on the CPU (no GPU needed).

    python3 -m venv .venv-triton36 && .venv-triton36/bin/pip install triton==3.6.0 numpy
    .venv-triton36/bin/python benchmarks/sweeps/compile_sm90.py    # -> src/tilewise/advise/sm90_gemm_compiled.json
    python benchmarks/sweeps/compile_sm90.py --out /tmp/compiled.json   # any interpreter with triton 3.6

Any interpreter with triton 3.6.x works (another version compiles other shared-memory sizes, so the script
refuses it in one line, exit 2); a GPU is not needed.

Triton 3.6 (the H200's) builds the cubin for GPUTarget("cuda", 90, 128) here; the shared memory it
reserves is the launch's fit test (the kernel fails to launch above the 232448-byte opt-in limit).
The script stubs the three torch dtypes gemm.py names at import, so it needs no torch; it compiles
one specialization (16-aligned sizes and strides, row-major A and B), the one most shapes take, and for each
config the builds whose C rows (and N) are only 2, 4 or 8 bytes aligned (N odd, N = 2 or 4 mod 8 at 16 bits),
each with and without the masked K-remainder step: their registers and the bytes they spill per thread, read
from the cubin with the cuobjdump Triton ships ("regs" / "spill" by C-row bytes, then "even_k" / "k_tail"). Those stores
cannot be vectorized, every element keeps its own address, and the big tiles spill (128 x 128 with 4 warps:
712 B of stack at 2-byte rows, none at 16): the advisor leaves out a config that spills for the problem's C rows
(`tilewise.advise.space.gemm_fits`).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")


def _stub_torch() -> None:
    if "torch" in sys.modules:
        return
    t = types.ModuleType("torch")
    for name in ("bfloat16", "float16", "float32"):
        setattr(t, name, object())
    t.Tensor = type("Tensor", (), {})
    t.device = type("device", (), {})
    t.dtype = type("dtype", (), {})
    t._C = types.ModuleType("torch._C")  # kernels/utils.py looks up a raw-stream getter at import
    sys.modules["torch"] = t


DEFAULT_OUT = os.path.join(ROOT, "src", "tilewise", "advise", "sm90_gemm_compiled.json")
# C-row alignments (bytes) compiled beside the 16-byte one, per dtype: the widths row_load_bytes can give
NARROW_C = {"bf16": (2, 4, 8), "fp32": (4, 8)}


def _resources(cubin: bytes, cuobjdump: str) -> tuple[int, int]:
    """(registers per thread, spill bytes per thread) of a cubin, from `cuobjdump -res-usage`."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run([cuobjdump, "-res-usage", f.name], capture_output=True, text=True, check=True).stdout
    m = re.search(r"REG:(\d+).*?STACK:(\d+)", text.replace("\n", " "))
    if not m:
        raise RuntimeError(f"cuobjdump -res-usage gave no REG/STACK line: {text[:200]!r}")
    return int(m.group(1)), int(m.group(2))


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--out", default=DEFAULT_OUT, help="file to write (default: the advisor's package data)")
    a = p.parse_args(argv)
    _stub_torch()
    sys.path.insert(0, os.path.join(ROOT, "src"))
    import triton

    if not triton.__version__.startswith("3.6."):
        print(
            f"compile_sm90: needs triton 3.6.x (the H200 figures' version), found {triton.__version__}", file=sys.stderr
        )
        return 2
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tilewise.advise import space
    from tilewise.kernels import gemm

    fn = gemm._matmul_kernel  # the sweep compiles the same function through matmul()
    names = list(inspect.signature(fn.fn).parameters)
    cuobjdump = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    if not os.path.exists(cuobjdump):
        print(f"compile_sm90: needs the cuobjdump Triton ships, not found at {cuobjdump}", file=sys.stderr)
        return 2

    def build(c: dict, dt: str, c_row_bytes: int, even_k: bool) -> tuple[int, int, int]:
        """(shared bytes, registers, spill bytes) of one config whose C rows (and N) are c_row_bytes aligned;
        even_k False: with the masked K-remainder step."""
        e = 4 if dt == "fp32" else 2
        mul_c = c_row_bytes // e  # the launcher passes stride_cm and N divided by this power of two
        vals = dict(
            BLOCK_M=c["block_m"], BLOCK_N=c["block_n"], BLOCK_K=c["block_k"], GROUP_M=c["group_m"],
            SPLIT_K=c["split_k"], EVEN_K=even_k, HAS_BIAS=False, ACTIVATION="none", MUL_ML=8, MUL_NL=8,
            INPUT_PRECISION="tf32" if dt == "fp32" else "ieee", BIG=False,
            A_EVICT="evict_last" if c["stream_b"] else "", B_EVICT="evict_first" if c["stream_b"] else "",
            MUL_AM=8, MUL_AK=1, MUL_BK=8, MUL_BN=1, MUL_CM=mul_c, MUL_CN=1, MUL_N=mul_c,
        )  # fmt: skip
        narrow = c_row_bytes < 16  # the stride and N then carry no divisibility hint
        sig, cons, attrs = {}, {}, {}
        for i, n in enumerate(names):
            if n in vals:
                sig[n], cons[(i,)] = "constexpr", vals[n]
            elif n in ("MUL_M", "MUL_K"):
                sig[n], cons[(i,)] = "constexpr", 1
            elif n.endswith("_ptr"):
                sig[n] = {"ws_ptr": "*fp32", "counter_ptr": "*i32"}.get(n, "*" + dt)
                attrs[(i,)] = [["tt.divisibility", 16]]
            elif n in ("stride_ak", "stride_bn", "stride_cn"):
                sig[n], cons[(i,)] = "constexpr", 1
            elif narrow and n in ("stride_cm", "N"):
                sig[n] = "i32"
            else:
                sig[n], attrs[(i,)] = "i32", [["tt.divisibility", 16]]
        k = triton.compile(
            ASTSource(fn=fn, signature=sig, constexprs=cons, attrs=attrs),
            target=GPUTarget("cuda", 90, 128),
            options={"num_warps": c["num_warps"], "num_stages": c["num_stages"]},
        )
        regs, spill = _resources(k.asm["cubin"], cuobjdump)
        return int(k.metadata.shared), regs, spill

    out = {}
    for dt in ("bf16", "fp32"):
        for c in space.gemm_grid():
            if c["persistent"] or (dt == "fp32" and c["block_k"] > 128):
                continue
            t = time.time()
            key = f"{dt}:{space.gemm_tag(c)}"
            try:
                row: dict = {"regs": {}, "spill": {}}
                for width in (16, *NARROW_C[dt]):
                    for even_k in (True, False):
                        shared, r, sp = build(c, dt, width, even_k)
                        if width == 16 and even_k:  # the fit rule's shared memory: the specialization most shapes take
                            row["shared"] = shared
                        row["regs"].setdefault(str(width), {})["even_k" if even_k else "k_tail"] = r
                        row["spill"].setdefault(str(width), {})["even_k" if even_k else "k_tail"] = sp
                row["compile_s"] = round(time.time() - t, 2)
                out[key] = row
            except Exception as e:
                out[key] = {"error": repr(e)[:200], "compile_s": round(time.time() - t, 2)}
            print(key, out[key], flush=True)
    path = a.out
    with open(path, "w") as f:
        json.dump({"triton": triton.__version__, "target": "cuda sm_90", "configs": out}, f, indent=1)
    print(f"{len(out)} -> {path}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="tw36cache"))
    sys.exit(main())
