"""`tilewise bench overhead`: what every op costs the host per call, side by side with its torch peer.

Each op runs on a tiny problem, so the GPU's work (a few microseconds) hides behind the host's: N calls
back to back with one synchronisation at the end, divided by N, is the host's cost per call. Ours and the
peer alternate round by round on the same inputs; a row keeps the median over rounds (and the spread).
The target: ours within 10 us of the peer (a launch costs the H200's host ~10 us). Two reference rows time an empty Triton kernel
launched through the JIT (`kernel[grid](...)`) and through its compiled kernel's runner, and a third
launches it through tilewise's `Launcher` (Triton's C entry point after the first call) beside that
runner, so the rows show how much of a call is the launch.

`--eager-targets` adds the eager targets (GEMM 1000^3, 2x4096x4096, 8x14336x4096 against cuBLAS;
decode B1-B8 GQA at 8k-128k keys against SDPA; the sum over the last dim of [64, 2^20] fp16 against
torch.sum), each timed two ways: `triton.testing.do_bench` (median of per-call CUDA-event times with an
L2 flush between calls, which hides up to ~70 us of host time) and back-to-back calls (host included).

Every row names the host CPU: host cost differs between device hosts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from tilewise import kernels as K
from tilewise.bench import harness
from tilewise.errors import InputError
from tilewise.model import traffic

NAME = "overhead"
HELP = "host cost per call (us) of every op and its torch peer on tiny problems; --eager-targets: eager GEMM/decode/sum targets"

TARGET_US = 10.0  # within 10 us of the peer: one extra launch's worth of host time
DEVICE = "cuda"  # the eager targets' inputs (a CPU test of the rows changes it)
OPS = (
    "empty",
    "launcher",
    "matmul",
    "sum",
    "sum_dim",
    "attention",
    "decode",
    "grouped",
    "moe",
    "flash_ffn",
    "ffn_module",
    "mhmoe",
)


def check(args: argparse.Namespace) -> None:
    """Refuse bad arguments before any GPU work."""
    parse_ops(args.ops)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ops", default="all", help=f"all or a comma list of {', '.join(OPS)} (default: all)")
    p.add_argument("--calls", type=int, default=2000, help="calls per timing, one sync at the end (default 2000)")
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds of ours / peer (default 5)")
    p.add_argument("--eager-targets", action="store_true", help="also time the eager targets (GEMM, decode, sum)")
    p.add_argument("--rep-ms", type=float, default=50, help="do_bench repetition time per round (eager targets)")
    p.add_argument(
        "--rows-out", metavar="FILE", help="also append each row to FILE as one JSON line the moment it is measured"
    )


def _emit(args: argparse.Namespace, row: dict[str, Any]) -> dict[str, Any]:
    """Append a finished row to --rows-out (a run that is cut short keeps what it measured)."""
    path = getattr(args, "rows_out", None)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")
    return row


def _cuda_sync() -> None:
    import torch

    torch.cuda.synchronize()


def per_call_us(fn: Callable[..., Any], calls: int, sync: Any = _cuda_sync) -> float:
    """Host time per call: `calls` calls back to back, one synchronisation, divided."""
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) / calls * 1e6


def alternate(
    ours: Any, peer: Any, calls: int, rounds: int, sync: Any = _cuda_sync, warmup: int = 20
) -> dict[str, float]:
    """ours / peer per-call times alternating for `rounds`: medians and min/max (us)."""
    for f in (ours, peer):
        if f is not None:
            for _ in range(warmup):  # compile, plan, warm the caching allocator
                f()
    samples: dict[str, list[float]] = {"ours": [], "peer": []}
    for _ in range(rounds):
        samples["ours"].append(per_call_us(ours, calls, sync))
        if peer is not None:
            samples["peer"].append(per_call_us(peer, calls, sync))
    out: dict[str, float] = {}
    for name, xs in samples.items():
        if xs:
            out[f"{name}_us"] = statistics.median(xs)
            out[f"{name}_min_us"] = min(xs)
            out[f"{name}_max_us"] = max(xs)
    return out


def _cases(torch: Any, F: Any, dev: str = "cuda", dtype: Any = None) -> Any:
    """name -> (shape label, dtype label, ours, peer name, peer): the tiny problems of the host-cost table (docs/bench.md)."""
    from tilewise.bench.mhmoe_peer import experts_forward_torch
    from tilewise.kernels import ffn as ffn_mod
    from tilewise.kernels import mhmoe as mh
    from tilewise.kernels.moe_layer import permute, route
    from tilewise.kernels.utils import Launcher, empty_kernel

    bf = dtype or torch.bfloat16  # the CPU interpreter computes bf16 wrongly: its smoke test passes fp16
    g = torch.Generator(device=dev).manual_seed(0)

    def rn(*shape: Any, dtype: Any = bf) -> Any:
        return torch.randn(*shape, device=dev, dtype=dtype, generator=g)

    ex = torch.empty(16, device=dev)
    compiled = empty_kernel[(1,)](ex, 16, BLOCK=16)
    launch = compiled[(1, 1, 1)] if compiled is not None else (lambda *a: None)  # None: the CPU interpreter
    launcher = Launcher(empty_kernel, (1,), {"BLOCK": 16})
    cases = {
        "empty": ("1 program", "-", lambda: empty_kernel[(1,)](ex, 16, BLOCK=16), "compiled kernel launch",
                  lambda: launch(ex, 16, 16)),
        # tilewise's own launch path (kernels.utils.Launcher: the C entry point after the first call)
        "launcher": ("1 program", "-", lambda: launcher(ex, 16), "compiled kernel launch",
                     lambda: launch(ex, 16, 16)),
    }  # fmt: skip
    a, b = rn(64, 64), rn(64, 64)
    cases["matmul"] = ("64x64x64", "bf16", lambda: K.matmul(a, b), "torch.matmul", lambda: torch.matmul(a, b))
    xs = rn(65536, dtype=torch.float32)
    cases["sum"] = ("65536", "fp32", lambda: K.sum(xs), "torch.sum", lambda: torch.sum(xs))
    xd = rn(64, 1024)
    cases["sum_dim"] = ("64x1024 dim=-1", "bf16", lambda: K.sum(xd, -1), "torch.sum", lambda: torch.sum(xd, -1))
    q, k, v = rn(1, 2, 64, 64), rn(1, 2, 64, 64), rn(1, 2, 64, 64)
    cases["attention"] = (
        "B1 H2 S64 D64", "bf16", lambda: K.attention(q, k, v), "SDPA",
        lambda: F.scaled_dot_product_attention(q, k, v),
    )  # fmt: skip
    dq, dk, dv = rn(1, 8, 1, 128), rn(1, 2, 256, 128), rn(1, 2, 256, 128)
    lens = torch.full((1,), 256, device=dev, dtype=torch.int32)
    cases["decode"] = (
        "B1 Hq8 Hkv2 L256 D128 (lengths on the GPU)", "bf16", lambda: K.decode_attention(dq, dk, dv, lens),
        "SDPA enable_gqa", lambda: F.scaled_dot_product_attention(dq, dk, dv, enable_gqa=True),
    )  # fmt: skip
    E, rows, kk, nn = 8, 16, 128, 128
    gx, gw = rn(E * rows, kk), rn(E, kk, nn)
    offs = torch.arange(rows, E * rows + 1, rows, device=dev, dtype=torch.int32)
    cases["grouped"] = (
        f"E{E} x {rows} rows, K{kk} N{nn} (check_offsets=False)", "bf16",
        lambda: K.grouped_matmul(gx, gw, offs, check_offsets=False), "torch._grouped_mm",
        lambda: torch._grouped_mm(gx, gw, offs=offs),
    )  # fmt: skip
    T, d, f, top_k = 32, 128, 128, 2
    mx, ml = rn(T, d), rn(T, E, dtype=torch.float32)
    mgu, mdn = rn(E, d, 2 * f) / d**0.5, rn(E, f, d) / f**0.5

    def moe_torch() -> Any:
        weights, experts = route(ml, top_k)
        order, offsets = permute(experts, E)
        h = torch._grouped_mm(mx[torch.div(order, top_k, rounding_mode="floor")], mgu, offs=offsets)
        h = F.silu(h[:, :f]) * h[:, f:]
        y = torch._grouped_mm(h, mdn, offs=offsets) * weights.reshape(-1)[order].to(bf)[:, None]
        out = torch.empty_like(y)
        out[order] = y
        return out.view(T, top_k, d).sum(dim=1)

    cases["moe"] = (
        f"T{T} d{d} f{f} E{E} top{top_k}", "bf16", lambda: K.moe(mx, ml, mgu, mdn, top_k),
        "torch._grouped_mm layer", moe_torch,
    )  # fmt: skip
    z, wg, wu, wd = rn(64, 2, 64), rn(2, 64, 128) / 8, rn(2, 64, 128) / 8, rn(2, 128, 64) / 11
    cases["flash_ffn"] = (
        "T64 H2 d64 I128", "bf16", lambda: K.flash_ffn(z, wg, wu, wd), "torch bmm (mhffn_unfused)",
        lambda: ffn_mod.mhffn_unfused(z, wg, wu, wd),
    )  # fmt: skip
    fused = K.MultiHeadFFN(128, 2, 64, 128, device=dev, dtype=bf)
    unfused = K.MultiHeadFFN(128, 2, 64, 128, fused=False, device=dev, dtype=bf)
    unfused.load_state_dict(fused.state_dict())
    fx = rn(64, 128)
    cases["ffn_module"] = (
        "MultiHeadFFN T64 d128 H2 d64 I128", "bf16", lambda: fused(fx), "the module, fused=False",
        lambda: unfused(fx),
    )  # fmt: skip
    layer = K.MultiHeadMoE(128, 2, 64, 4, 64, 2, device=dev, dtype=bf)
    hx = rn(32, 128)

    def mhmoe_torch() -> Any:
        zz, weights, experts = layer.route(hx)
        y = experts_forward_torch(zz.contiguous(), mh.plan(weights, experts, layer.num_experts), layer.w_gate_up,
                                     layer.w_down)  # fmt: skip
        return y.reshape(32, 128) @ layer.w_out

    cases["mhmoe"] = (
        "MultiHeadMoE T32 d128 H2 d64 E4 f64 top2", "bf16", lambda: layer(hx), "the same routing on torch._grouped_mm",
        mhmoe_torch,
    )  # fmt: skip
    return cases


def parse_ops(text: str) -> list[str]:
    """'all' or a comma list of OPS names."""
    names = list(OPS) if str(text).strip() == "all" else [s.strip() for s in str(text).split(",") if s.strip()]
    unknown = [n for n in names if n not in OPS]
    if unknown or not names:
        raise InputError(f"--ops: expected 'all' or names from {', '.join(OPS)}, got {text!r}")
    return names


def _overhead_rows(
    args: argparse.Namespace,
    torch: Any,
    F: Any,
    tags: dict[str, Any],
    progress: Any,
    cases: Any = None,
    sync: Callable[[], None] = _cuda_sync,
    warmup: int = 20,
) -> list[dict[str, Any]]:
    names = parse_ops(args.ops)
    cases = cases or _cases(torch, F)
    from tilewise.kernels.utils import fast_launch_enabled

    # how tilewise's launchers call Triton in this run (TILEWISE_JIT_LAUNCH=1 keeps the JIT path)
    launch_path = "compiled kernel after the first call" if fast_launch_enabled() else "JIT every call"
    rows = []
    with torch.no_grad():
        for name in progress(names, total=len(names), desc="overhead"):
            shape, dtype, ours, peer_name, peer = cases[name]
            try:
                t = alternate(ours, peer, args.calls, args.rounds, sync, warmup)
            except Exception as e:  # one broken op must not lose the others' rows
                rows.append(
                    _emit(
                        args, {"kernel": name, "shape": shape, "error": f"{type(e).__name__}: {str(e)[:300]}", **tags}
                    )
                )
                continue
            ours_us, peer_us = t["ours_us"], t.get("peer_us")
            rows.append(
                {
                    "kernel": {"empty": "triton launch", "launcher": "tilewise launch"}.get(name, name),
                    "shape": shape,
                    "dtype": dtype,
                    "peer": peer_name,
                    "ours_us": ours_us,
                    "peer_us": peer_us,
                    "extra_us": None if peer_us is None else ours_us - peer_us,
                    "within_target": None
                    if name in ("empty", "launcher") or peer_us is None
                    else ours_us - peer_us <= TARGET_US,
                    "ours_ms": ours_us * 1e-3,
                    "peer_ms": None if peer_us is None else peer_us * 1e-3,
                    "speedup": None if not peer_us else peer_us / ours_us,
                    "calls": args.calls,
                    "rounds": args.rounds,
                    "method": "N calls back to back, one sync; median of alternating rounds",
                    "launch": launch_path,
                    **{k: v for k, v in t.items() if k.endswith(("min_us", "max_us"))},
                    **{k: tags.get(k) for k in harness.TAG_KEYS},
                }
            )
            _emit(args, rows[-1])
    return rows


# (name, Hq, Hkv, batch, keys): decode B1-B8 with GQA (32 query heads on 8 KV heads) at 8k-128k keys
DECODE_TARGETS = [(f"B{b} Hq32 Hkv8 L{keys // 1024}k", 32, 8, b, keys) for b in (1, 2, 4, 8) for keys in (8192, 131072)]
GEMM_TARGETS = [(1000, 1000, 1000), (2, 4096, 4096), (8, 14336, 4096)]


def _eager_rows(args: argparse.Namespace, torch: Any, F: Any, tags: Any, progress: Any) -> list[dict[str, Any]]:
    from tilewise.kernels import decode_attention, matmul
    from tilewise.kernels import sum as tw_sum

    gpu_key = harness.registry_key_for(tags["gpu"])
    rows = []
    bf = torch.bfloat16

    def row(
        kernel: Any,
        shape: Any,
        dtype: Any,
        peer: Any,
        ours: Any,
        peer_fn: Any,
        flops: Any,
        nbytes: Any,
        calls: int,
        target: Any,
    ) -> None:
        t = harness.time_pair(lambda i: ours(), lambda i: peer_fn(), rounds=3, rep_ms=args.rep_ms)
        loop = alternate(ours, peer_fn, calls, 3)
        r = harness.make_row(
            kernel=kernel, shape=shape, dtype=dtype, peer=peer, ours_ms=t["ours_ms"], peer_ms=t["peer_ms"],
            flops=flops, nbytes=nbytes, tags=tags, gpu_key=gpu_key,
            extra={
                "target": target, "meets_target_do_bench": t["peer_ms"] / t["ours_ms"] >= target,
                "ours_loop_us": loop["ours_us"], "peer_loop_us": loop["peer_us"],
                "speedup_loop": loop["peer_us"] / loop["ours_us"],
                "meets_target_loop": loop["peer_us"] / loop["ours_us"] >= target, "loop_calls": calls,
                **harness.timing_fields(t),
            },
        )  # fmt: skip
        rows.append(_emit(args, r))

    work = [("gemm", s) for s in GEMM_TARGETS] + [("decode", s) for s in DECODE_TARGETS] + [("sum", None)]
    for kind, spec in progress(work, total=len(work), desc="eager targets"):
        try:
            _eager_one(kind, spec, row, torch, F, bf, matmul, decode_attention, tw_sum, traffic)
        except Exception as e:  # one broken target must not lose the others' rows
            rows.append(
                _emit(
                    args, {"kernel": kind, "shape": str(spec), "error": f"{type(e).__name__}: {str(e)[:300]}", **tags}
                )
            )
    return rows


def _eager_one(
    kind: str,
    spec: Any,
    row: Callable[..., None],
    torch: Any,
    F: Any,
    bf: Any,
    matmul: Any,
    decode_attention: Any,
    tw_sum: Any,
    traffic: Any,
) -> None:
    if kind == "gemm":
        m, n, k = spec
        a = torch.randn(m, k, device=DEVICE, dtype=bf)
        b = torch.randn(k, n, device=DEVICE, dtype=bf)
        row("matmul", f"{m}x{n}x{k}", "bf16", "torch.matmul (cuBLAS)", lambda a=a, b=b: matmul(a, b),
            lambda a=a, b=b: torch.matmul(a, b), traffic.gemm_flops(m, n, k), traffic.gemm_bytes(m, n, k, "bf16"),
            500, 0.9)  # fmt: skip
    elif kind == "decode":
        name, hq, hk, batch, keys = spec
        q = torch.randn(batch, hq, 1, 128, device=DEVICE, dtype=bf)
        kc = torch.randn(batch, hk, keys, 128, device=DEVICE, dtype=bf)
        vc = torch.randn_like(kc)
        lens = torch.full((batch,), keys, device=DEVICE, dtype=torch.int32)
        row("decode_attention", name, "bf16", "SDPA enable_gqa",
            lambda q=q, kc=kc, vc=vc, lens=lens: decode_attention(q, kc, vc, lens),
            lambda q=q, kc=kc, vc=vc: F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True),
            traffic.decode_flops([keys] * batch, hq, 128), traffic.decode_bytes([keys] * batch, hq, hk, 128, "bf16"),
            max(20, min(500, int(2e9 / (batch * hk * keys * 128 * 4)))), 0.95)  # fmt: skip
        del q, kc, vc
    else:
        x = torch.randn(64, 1 << 20, device=DEVICE, dtype=torch.float16)
        row("sum", "64x1048576 dim=-1", "fp16", "torch.sum", lambda x=x: tw_sum(x, -1), lambda x=x: torch.sum(x, -1),
            traffic.sum_flops(x.numel()), traffic.sum_bytes(x.numel(), "fp16", outputs=64), 300, 0.95)  # fmt: skip
        del x


def run(args: argparse.Namespace, progress: Any) -> list[dict[str, Any]]:
    import torch
    import torch.nn.functional as F

    if args.calls < 1 or args.rounds < 1:
        raise InputError(f"--calls and --rounds must be >= 1, got {args.calls} and {args.rounds}")
    names = parse_ops(args.ops)  # refuse a bad list before anything runs
    tags = harness.env_tags()
    rows = _overhead_rows(args, torch, F, tags, progress) if names else []
    if args.eager_targets:
        rows += _eager_rows(args, torch, F, tags, progress)
    return rows
