"""Compile tilewise's kernels for sm_90 with triton 3.6 (no GPU): shared memory, registers, spills per config."""

# ruff: noqa: B023, E402  (each lambda runs at once inside rec(); sys.path is set before the imports)
# Run: TRITON36_SITE=<venv with triton==3.6.0>/lib/python3.11/site-packages TORCH_SITE=<a venv with torch>/lib/python3.11/site-packages python benchmarks/probes/kernel_resources_sm90.py [attention decode gemm grouped ffn]
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ.get("TRITON36_SITE", ""))
sys.path.append(os.environ.get("TORCH_SITE", ""))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "src"))
os.environ.pop("TRITON_INTERPRET", None)
import triton
import triton.language as tl

assert triton.__version__.startswith("3.6"), triton.__version__
import torch
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from tilewise.kernels import decode as dec
from tilewise.kernels import ffn as F
from tilewise.kernels import flash_attention as fa
from tilewise.kernels import gemm as G
from tilewise.kernels import grouped_gemm as GG

PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/ptxas")
TARGET = GPUTarget("cuda", 90, 128)
LIMIT = 232448
TL = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}


def compile_(fn, ptrs: dict, floats=(), descs: dict | None = None, consts=None, div16=(), **opts):
    descs = descs or {}
    sig = {}
    for n in fn.arg_names:
        if n in consts:
            sig[n] = "constexpr"
        elif n in descs:
            sig[n] = descs[n]
        elif n in ptrs:
            sig[n] = "*" + ptrs[n]
        elif n in floats:
            sig[n] = "fp32"
        else:
            sig[n] = "i32"
    # what the JIT sees on the GPU: 16-byte aligned pointers, and strides (of non-unit dims) divisible by 16
    attrs = {
        (i,): [["tt.divisibility", 16]]
        for i, n in enumerate(fn.arg_names)
        if n not in consts and n not in descs and (n in ptrs or n.startswith("stride") or n in div16)
    }
    src = ASTSource(fn, signature=sig, constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()}, attrs=attrs)
    c = triton.compile(src, target=TARGET, options=opts)
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(c.asm["ptx"])
        path = f.name
    out = subprocess.run([PTXAS, "-arch=sm_90a", "-v", path, "-o", "/dev/null"], capture_output=True, text=True).stderr
    regs = re.search(r"Used (\d+) registers", out)
    spill = re.search(r"(\d+) bytes spill stores", out)
    return dict(
        shared=c.metadata.shared,
        regs=int(regs.group(1)) if regs else None,
        spill=int(spill.group(1)) if spill else None,
    )


rows = []


def rec(kernel, what, fn):
    try:
        r = fn()
        r.update(kernel=kernel, what=what, fits=r["shared"] <= LIMIT)
    except Exception as e:
        r = dict(kernel=kernel, what=what, error=f"{type(e).__name__}: {str(e)[:200]}")
    rows.append(r)
    print(json.dumps(r), flush=True)


which = sys.argv[1:] or ["attention", "decode", "gemm", "grouped", "ffn"]
fa.interpreting = lambda: False
if "attention" in which:
    for d, dt in [
        (int(x.split(":")[0]), {"fp16": torch.float16, "fp32": torch.float32}[x.split(":")[1]])
        for x in os.environ.get("ATT", "64:fp32,128:fp32,256:fp32,64:fp16,128:fp16,256:fp16").split(",")
    ]:
        # the default tile at the attention suite's headline shape (B4 H32 S4096): the advisor's top-1
        cfg = fa.forward_config(d, True, dt, 4096, batch=4, heads=32)
        t = TL[dt]
        for use_desc in (False, True) if dt != torch.float32 else (False,):
            descs = (
                {"k_desc": f"tensordesc<{t}[{cfg.block_n}, {d}]>", "v_desc": f"tensordesc<{t}[{cfg.block_n}, {d}]>"}
                if use_desc
                else {}
            )
            ptrs = dict(Q=t, K=t, V=t, O=t, LSE="fp32", k_desc=t, v_desc=t)
            consts = dict(
                HEAD_DIM=d,
                BLOCK_M=cfg.block_m,
                BLOCK_N=cfg.block_n,
                CAUSAL=True,
                USE_DESC=use_desc,
                DOT_PRECISION="ieee" if dt == torch.float32 else "tf32",
                WS=False,
            )
            rec(
                "attention",
                f"D{d} {t} {cfg.block_m}x{cfg.block_n} w{cfg.num_warps} s{cfg.num_stages} desc={use_desc}",
                lambda: compile_(
                    fa._attn_fwd_kernel,
                    ptrs,
                    ["qk_scale"],
                    descs,
                    consts,
                    num_warps=cfg.num_warps,
                    num_stages=cfg.num_stages,
                ),
            )
if "decode" in which:
    for d, dt, group, single in itertools.product((64, 128, 256), (torch.bfloat16, torch.float32), (4,), (False,)):
        bn, w, st = dec.default_tile(d, 4 if dt == torch.float32 else 2)
        t = TL[dt]
        ptrs = dict(
            Q=t, K=t, V=t, k_desc=t, v_desc=t, LENS="i32", TABLE="i32", O=t, LSE="fp32", O_PART="fp32", LSE_PART="fp32"
        )
        consts = dict(
            GROUP=group,
            BLOCK_G=max(16, triton.next_power_of_2(group)),
            BLOCK_N=bn,
            HEAD_DIM=d,
            SINGLE=single,
            PAGE=bn,
            PAGED=False,
            USE_DESC=False,
        )
        rec(
            "decode",
            f"D{d} {t} G{group} single={single} BN{bn} w{w} s{st}",
            lambda: compile_(dec._decode_split_kernel, ptrs, ["qk_scale"], {}, consts, num_warps=w, num_stages=st),
        )
if "gemm" in which:
    cfgs = [G.SKINNY_8, G.SKINNY_16, G.SKINNY_64, G.SKINNY_64_FEW, G.SKINNY_128, G.SKINNY_128_FEW, *G.COMPUTE, G.TF32]
    for cfg in cfgs:
        for dt in (torch.float32,) if cfg is G.TF32 else (torch.bfloat16,):
            t = TL[dt]
            c = cfg
            if c.persistent:  # the pointer-kernel fallback (the persistent kernel needs descriptors: below)
                st = 4 if G._smem_bytes(c.block_m, c.block_n, c.block_k, 4, 2) <= 200 * 1024 else 3
                c = G.dataclasses.replace(c, persistent=False, warp_specialize=False, num_stages=max(c.num_stages, st))
            ptrs = dict(a_ptr=t, b_ptr=t, c_ptr=t, bias_ptr=t, ws_ptr="fp32", counter_ptr="i32")
            consts = dict(
                BLOCK_M=c.block_m,
                BLOCK_N=c.block_n,
                BLOCK_K=c.block_k,
                GROUP_M=c.group_m,
                SPLIT_K=1,
                EVEN_K=True,
                HAS_BIAS=False,
                ACTIVATION="none",
                MUL_ML=8,
                MUL_NL=8,
                INPUT_PRECISION="tf32" if dt == torch.float32 else "ieee",
                BIG=False,
                A_EVICT="",
                B_EVICT="",
                MUL_AM=8,
                MUL_AK=1,
                MUL_BK=8,
                MUL_BN=1,
                MUL_CM=8,
                MUL_CN=1,
            )
            rec(
                "gemm",
                f"{c.tag()} {t}",
                lambda: compile_(
                    G._matmul_kernel,
                    ptrs,
                    (),
                    {},
                    consts,
                    div16=("M", "N", "K", "K_PER_SPLIT", "stride_am", "stride_bk", "stride_cm"),
                    num_warps=c.num_warps,
                    num_stages=c.num_stages,
                ),
            )
        if cfg.persistent:
            for ws in (False, True):
                t = "bf16"
                split = cfg.block_n >= 128
                descs = dict(
                    a_desc=f"tensordesc<bf16[{cfg.block_m}, {cfg.block_k}]>",
                    b_desc=f"tensordesc<bf16[{cfg.block_k}, {cfg.block_n}]>",
                    c_desc=f"tensordesc<bf16[{cfg.block_m}, {cfg.block_n // 2 if split else cfg.block_n}]>",
                )
                consts = dict(
                    BLOCK_M=cfg.block_m,
                    BLOCK_N=cfg.block_n,
                    BLOCK_K=cfg.block_k,
                    GROUP_M=cfg.group_m,
                    NUM_PROGRAMS=132,
                    HAS_BIAS=False,
                    ACTIVATION="none",
                    EPILOGUE_SPLIT=split,
                    OUT_DTYPE=tl.bfloat16,
                    WARP_SPECIALIZE=ws,
                )
                rec(
                    "gemm",
                    f"persistent {cfg.tag()} ws={ws}",
                    lambda: compile_(
                        G._matmul_tma_persistent_kernel,
                        dict(bias_ptr="bf16"),
                        (),
                        descs,
                        consts,
                        num_warps=cfg.num_warps,
                        num_stages=cfg.num_stages,
                    ),
                )
if "grouped" in which:
    seen = set()
    for rows_e, n, k, dt, glu in itertools.product(
        (8, 16, 32, 64, 128, 1024), (1536, 14336), (2048, 4096), (torch.bfloat16, torch.float32), (False, True)
    ):
        cfg = GG.choose_config(rows_e, n, k, dt, on_gpu=True, glu=glu)
        key = (cfg, dt, glu)
        if key in seen:
            continue
        seen.add(key)
        t = TL[dt]
        ptrs = dict(
            x_ptr=t,
            w_ptr=t,
            y_ptr=t,
            offsets_ptr="i32",
            prefix_ptr="i32",
            map_e_ptr="i32",
            map_l_ptr="i32",
            gather_ptr="i64",
            scatter_ptr="i64",
            scale_ptr="fp32",
            trace_ptr="i32",
            x_desc=t,
            w_desc=t,
        )
        descs = {}
        if cfg.tma:
            descs = dict(
                x_desc=f"tensordesc<{t}[{cfg.block_m}, {cfg.block_k}]>",
                w_desc=f"tensordesc<{t}[1, {cfg.block_k}, {cfg.block_n}]>",
            )
        consts = dict(
            BLOCK_M=cfg.block_m,
            BLOCK_N=cfg.block_n,
            BLOCK_K=cfg.block_k,
            NUM_PROGRAMS=132,
            NUM_STAGES=cfg.num_stages,
            SEARCH_STEPS=7,
            USE_MAP=True,
            SWAP_AB=cfg.swap_ab,
            FLATTEN=cfg.flatten,
            EVEN_K=True,
            GLU=glu,
            GATHER=glu,
            SCATTER=not glu,
            SCALE=not glu,
            TRACE=False,
            TMA_X=cfg.tma and not glu,
            TMA_W=cfg.tma,
            INLINE_PREFIX=False,
            BLOCK_E=128,
        )
        rec(
            "grouped",
            f"{cfg.key()} {t} glu={glu}",
            lambda: compile_(
                GG._grouped_mm_kernel, ptrs, (), descs, consts, num_warps=cfg.num_warps, num_stages=cfg.num_stages
            ),
        )
if "ffn" in which:
    for d, dt in itertools.product((128, 64), (torch.float32,)):
        t = TL[dt]
        for name, kern, table, extra in (
            ("fwd", F._fwd_kernel, F._FWD, {}),
            ("dz", F._bwd_dz_kernel, F._BWD_DZ, {}),
            ("dw", F._bwd_dw_kernel, F._BWD_DW, dict(SPLIT=True, ATOMIC_DZ=False)),
            ("dw atomic", F._bwd_dw_kernel, F._BWD_DW_ATOMIC, dict(SPLIT=True, ATOMIC_DZ=True)),
        ):
            cfg = F._tiles(table, d, dt)
            ptrs = {n: t for n in kern.arg_names if n in ("Z", "WG", "WU", "WD", "Y", "DY", "DZ", "DWG", "DWU", "DWD")}
            ptrs.update(DWP="fp32", DZ32="fp32")
            consts = dict(D=d, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, EVEN_M=True, EVEN_N=True, **extra)
            rec(
                "ffn",
                f"{name} d{d} {t} {cfg}",
                lambda: compile_(kern, ptrs, (), {}, consts, num_warps=cfg.num_warps, num_stages=cfg.num_stages),
            )
json.dump(rows, open(f"kernel_resources_sm90_{'_'.join(which)}.json", "w"), indent=1)
