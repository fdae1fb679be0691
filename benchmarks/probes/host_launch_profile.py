"""Where a short call's host time goes on the device host: each way of launching an empty Triton kernel (the
JIT, the compiled kernel's runner, tilewise's Launcher on its runner and on its direct path, Triton's C entry
point with tensors or with raw addresses as pointer arguments), the torch calls a launcher makes (allocations,
stream and device queries), and the Python of `sum` / `decode_attention` / `matmul` with the launch itself
replaced by a no-op. Host us per call: N calls back to back, one sync, median of rounds. Then the GPU time
(do_bench) of decode B1/B2/B4 Hq32 Hkv8 L8k over split counts and key tiles beside SDPA.

    python benchmarks/probes/host_launch_profile.py --out benchmarks/results/h200/host_launch_profile.json
"""

import statistics
import time

import torch
import triton
import triton.language as tl
from common import parser, save

from tilewise import kernels as K
from tilewise.kernels import utils

CALLS, ROUNDS = 2000, 5


@triton.jit
def _eight_pointers(a, b, c, d, e, f, g, h, n, BLOCK: tl.constexpr):
    pass


def per_call(fn, calls=CALLS, rounds=ROUNDS) -> float:
    for _ in range(50):
        fn()
    xs = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        xs.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(xs)


def launch_rows() -> dict:
    ex = torch.empty(16, device="cuda")
    rows = {}
    rows["jit kernel[grid](...)"] = per_call(lambda: utils.empty_kernel[(1,)](ex, 16, BLOCK=16))
    compiled = utils.empty_kernel[(1,)](ex, 16, BLOCK=16)
    runner = compiled[(1, 1, 1)]
    rows["compiled[grid](...) runner"] = per_call(lambda: runner(ex, 16, 16))
    lz = utils.Launcher(utils.empty_kernel, (1,), {"BLOCK": 16})
    lz(ex, 16)
    rows[f"tilewise Launcher ({lz.path})"] = per_call(lambda: lz(ex, 16))
    go = utils.direct_launch(compiled, (1, 1, 1), (16,))
    if go is not None:
        rows["direct_launch closure"] = per_call(lambda: go(ex, 16))
    ts = [torch.empty(16, device="cuda") for _ in range(8)]
    c8 = _eight_pointers[(1,)](*ts, 16, BLOCK=16)
    go8 = utils.direct_launch(c8, (1, 1, 1), (16,))
    if go8 is not None:
        ptrs = [t.data_ptr() for t in ts]
        rows["direct, 8 tensor pointers"] = per_call(lambda: go8(*ts, 16))
        rows["direct, 8 int addresses"] = per_call(lambda: go8(*ptrs, 16))
    return rows


def torch_rows() -> dict:
    q = torch.randn(1, 8, 1, 128, device="cuda", dtype=torch.bfloat16)
    d, sh = q.device, (1, 8, 1, 128)
    f32 = torch.float32
    rows = {
        "torch.empty(shape, dtype=, device=)": lambda: torch.empty(sh, dtype=q.dtype, device=d),
        "torch.empty((), dtype=, device=)": lambda: torch.empty((), dtype=f32, device=d),
        "torch.empty_like(q)": lambda: torch.empty_like(q),
        "q.new_empty(shape)": lambda: q.new_empty(sh),
        "torch.empty_strided": lambda: torch.empty_strided(sh, (1024, 128, 128, 1), dtype=q.dtype, device=d),
        "torch.cuda.current_stream()": lambda: torch.cuda.current_stream(),
        "torch._C._cuda_getCurrentRawStream(0)": lambda: torch._C._cuda_getCurrentRawStream(0),
        "torch.cuda.current_device()": lambda: torch.cuda.current_device(),
        "torch._C._cuda_getDevice()": lambda: torch._C._cuda_getDevice(),
        "utils.workspace(...)": lambda: utils.workspace(d, 1, 1024, f32, "probe"),
        "signature tuple of 3 tensors": lambda: tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16 == 0) for t in (q, q, q)),
    }  # fmt: skip
    return {k: per_call(f) for k, f in rows.items()}


def python_of_ops() -> dict:
    """Each op's host time with its launches replaced by a no-op (after a real first call: plans cached)."""
    bf = torch.bfloat16
    xs = torch.randn(65536, device="cuda")
    xd = torch.randn(64, 1024, device="cuda", dtype=bf)
    xl = torch.randn(64, 1 << 20, device="cuda", dtype=torch.float16)
    a, b = torch.randn(64, 64, device="cuda", dtype=bf), torch.randn(64, 64, device="cuda", dtype=bf)
    dq, dk, dv = (
        torch.randn(*s, device="cuda", dtype=bf) for s in ((1, 8, 1, 128), (1, 2, 256, 128), (1, 2, 256, 128))
    )
    lens = torch.full((1,), 256, device="cuda", dtype=torch.int32)
    q8 = torch.randn(1, 32, 1, 128, device="cuda", dtype=bf)
    k8, v8 = (
        torch.randn(1, 8, 8192, 128, device="cuda", dtype=bf),
        torch.randn(1, 8, 8192, 128, device="cuda", dtype=bf),
    )
    l8 = torch.full((1,), 8192, device="cuda", dtype=torch.int32)
    ops = {
        "sum 65536 fp32": lambda: K.sum(xs),
        "sum 64x1024 dim=-1": lambda: K.sum(xd, -1),
        "sum 64x2^20 dim=-1": lambda: K.sum(xl, -1),
        "matmul 64^3": lambda: K.matmul(a, b),
        "decode B1 Hq8 Hkv2 L256": lambda: K.decode_attention(dq, dk, dv, lens),
        "decode B1 Hq32 Hkv8 L8k": lambda: K.decode_attention(q8, k8, v8, l8),
    }  # fmt: skip
    out = {}
    for name, f in ops.items():
        f()
        torch.cuda.synchronize()
        real = per_call(f, calls=500, rounds=3)
        saved = utils.Launcher.__call__
        utils.Launcher.__call__ = lambda self, *args: None
        try:
            python = per_call(f, calls=500, rounds=3)
        finally:
            utils.Launcher.__call__ = saved
        out[name] = {"per_call_us": real, "without_launches_us": python}
    return out


def decode_variants() -> dict:
    """GPU time (do_bench, L2 flushed) of decode B1/B2/B4 Hq32 Hkv8 L8k over split counts and key tiles,
    beside SDPA's: the eager target's GPU side (B2 ran at 0.67x SDPA with the advisor's plan)."""
    import torch.nn.functional as F
    from triton.testing import do_bench

    out = {}
    for batch in (1, 2, 4):
        q = torch.randn(batch, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(batch, 8, 8192, 128, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        lens = torch.full((batch,), 8192, device="cuda", dtype=torch.int32)
        row = {"sdpa": do_bench(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), rep=20)}
        row["default"] = do_bench(lambda q=q, k=k, v=v, n=lens: K.decode_attention(q, k, v, n), rep=20)
        for splits in (8, 16, 32):
            for tile in ((128, 4, 2), (128, 4, 3), (64, 4, 3)):

                def fn(q=q, k=k, v=v, n=lens, s=splits, t=tile):
                    return K.decode_attention(q, k, v, n, num_splits=s, tile=t)

                row[f"s{splits} bn{tile[0]} w{tile[1]} st{tile[2]}"] = do_bench(fn, rep=20)
        out[f"B{batch} Hq32 Hkv8 L8k"] = {name: ms * 1e3 for name, ms in row.items()}  # us
        print(batch, sorted(out[f"B{batch} Hq32 Hkv8 L8k"].items(), key=lambda kv: kv[1])[:6], flush=True)
    return out


def main() -> None:
    args = parser(__doc__, "benchmarks/results/h200/host_launch_profile.json").parse_args()
    data = {"calls": CALLS, "rounds": ROUNDS}
    parts = (("launch_us", launch_rows), ("torch_us", torch_rows), ("ops_us", python_of_ops))
    for name, f in (*parts, ("decode_gpu_us", decode_variants)):
        data[name] = f()
        print(name, data[name], flush=True)
        save(args.out, data)


if __name__ == "__main__":
    main()
