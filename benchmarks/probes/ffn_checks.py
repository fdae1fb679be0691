"""FlashFFN correctness at full size on the GPU: the forward output and all four gradients (dz, dW_gate, dW_up,
dW_down) in both backward modes, as the worst relative error against an fp32 evaluation of the unfused layer,
beside the same error of the unfused torch layer run in the low precision (`*_torch_lowp`). A case passes
when nothing is NaN and its worst error is at most max(3 x torch's, 2e-2).

    python benchmarks/probes/ffn_checks.py --out benchmarks/results/h200/ffn_checks.json
    python benchmarks/probes/ffn_checks.py --cases 4099x16x128x500xbf16,333x3x128x1000xbf16 \
        --out benchmarks/results/h200/ffn_checks_dh128.json

A case is TxHxD_HxIxDTYPE. The backward modes are reached through `tilewise.kernels.ffn._bwd(mode=...)`,
so the probe follows that name if it changes.
"""

import json
import traceback

import torch
from common import parser, save

from tilewise.kernels import ffn as ff

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
DEFAULT_CASES = "4099x16x128x500xbf16,4097x16x64x1000xbf16,16384x16x128x512xbf16,333x3x64x200xfp16"


def rel(a, b) -> float:
    return ((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30)).item()


def data(T, H, d, n, dt, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    z = torch.randn(T, H, d, device="cuda", dtype=dt, generator=g)
    wg = torch.randn(H, d, n, device="cuda", dtype=dt, generator=g) / d**0.5
    wu = torch.randn(H, d, n, device="cuda", dtype=dt, generator=g) / d**0.5
    wd = torch.randn(H, n, d, device="cuda", dtype=dt, generator=g) / n**0.5
    dy = torch.randn(T, H, d, device="cuda", dtype=dt, generator=g)
    return z, wg, wu, wd, dy


def check(T, H, d, n, dt, modes=("split", "atomic")) -> dict:
    z, wg, wu, wd, dy = data(T, H, d, n, dt, seed=T + n)
    ref_in = [t.float().requires_grad_() for t in (z, wg, wu, wd)]
    ff.mhffn_unfused(*ref_in).backward(dy.float())
    low_in = [t.detach().clone().requires_grad_() for t in (z, wg, wu, wd)]
    y_low = ff.mhffn_unfused(*low_in)
    y_low.backward(dy)
    with torch.no_grad():
        y_ref = ff.mhffn_unfused(*(t.detach() for t in ref_in))
    y = ff.flash_ffn(z, wg, wu, wd)
    out = dict(shape=f"T{T}_H{H}_dh{d}_I{n}", dtype=str(dt), y=rel(y, y_ref), y_torch_lowp=rel(y_low, y_ref))
    out["nan"] = bool(torch.isnan(y).any())
    names = ("dz", "dwg", "dwu", "dwd")
    for mode in modes:
        try:
            grads = ff._bwd(z, wg, wu, wd, dy, mode=mode)
        except Exception as e:  # one mode failing must not hide the other's numbers
            out[f"error_{mode}"] = repr(e)[:300]
            continue
        for name, gk, r in zip(names, grads, ref_in):
            out[f"{name}_{mode}"] = rel(gk, r.grad)
    for name, lo, r in zip(names, low_in, ref_in):
        out[f"{name}_torch_lowp"] = rel(lo.grad, r.grad)
    ours = [v for k, v in out.items() if k.startswith(("y", "d")) and "lowp" not in k and isinstance(v, float)]
    out["worst"] = max(ours)
    out["worst_torch_lowp"] = max(v for k, v in out.items() if "lowp" in k)
    errors = any(k.startswith("error") for k in out)
    out["ok"] = not out["nan"] and not errors and out["worst"] <= max(3 * out["worst_torch_lowp"], 2e-2)
    return out


def main() -> None:
    p = parser(__doc__, "benchmarks/results/h200/ffn_checks.json")
    p.add_argument("--cases", default=DEFAULT_CASES, help="TxHxD_HxIxDTYPE,... (default %(default)s)")
    args = p.parse_args()
    checks = []
    for case in args.cases.split(","):
        *dims, dtype = case.split("x")
        T, H, d, n = (int(v) for v in dims)
        try:
            r = check(T, H, d, n, DTYPES[dtype])
        except Exception as e:  # a case that cannot run (shared memory, say) is recorded, not skipped
            r = dict(shape=case, error=repr(e)[:800])
            traceback.print_exc()
        checks.append(r)
        print(json.dumps(r), flush=True)
        save(args.out, checks)


if __name__ == "__main__":
    main()
