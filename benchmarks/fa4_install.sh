#!/bin/bash
# Install FlashAttention-4 (PyPI flash-attn-4, CuTe DSL) on the device from wheels carried there, then smoke-test it.
#
#   bash benchmarks/fa4_install.sh WHEEL_DIR      # prints "fa4 ok" or "fa4 failed: ..." (then export TILEWISE_NO_FA4=1)
#
# The device has no network: download the py3.12 wheels here first (about 100 MB; the cu13 libraries alone are
# 92 MB, over one call's 64 MiB carry, which the tree itself takes ~21 MiB of: split them with `split -b 40M` and
# carry the parts over consecutive calls on a warm machine; this script joins cu13.part.* back):
#   pip download --pre --no-deps --python-version 3.12 --only-binary=:all: --platform manylinux_2_28_x86_64 \
#     flash-attn-4==4.0.0b36 nvidia-cutlass-dsl nvidia-cutlass-dsl-libs-base nvidia-cutlass-dsl-libs-core \
#     nvidia-cutlass-dsl-libs-cu13 apache-tvm-ffi torch-c-dlpack-ext quack-kernels einops
# (libs-core holds the `cutlass` Python package: without it `import cutlass.cute` fails; libs-base also lists
# cuda-bindings and protobuf, which the H200 device already has.)
# Done this way on 2026-12-02 (H200, then `benchmarks/attention_sweep_device.sh` and
# `benchmarks/probes/attention_fa4_peer.py`): three calls back to back on a warm machine, each carrying one folder
# and copying it to /tmp/w:
#   .dev/fa4a: cu13.part.aa (40 MiB)   .dev/fa4b: cu13.part.ab   .dev/fa4c: cu13.part.ac and the other eight wheels
# and in the third call `bash benchmarks/fa4_install.sh /tmp/w` before the run: "fa4 ok" in about 25 s.
set -u
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "fa4_install.sh: expected one argument, the folder of the carried wheels; got: ${*:-nothing}" >&2
  exit 2
fi
W=$1
cd "$W" || exit 2
if ls cu13.part.* > /dev/null 2>&1; then
  cat cu13.part.* > nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl && rm -f cu13.part.*
fi
python3 -m pip install -q --no-deps --no-index ./*.whl 2>&1 | tail -n 3
python3 - <<'PY'
import torch
try:
    from flash_attn.cute import flash_attn_func
    q = torch.randn(1, 256, 4, 128, device="cuda", dtype=torch.bfloat16)
    o = flash_attn_func(q, q, q, causal=True)
    o = o[0] if isinstance(o, tuple) else o
    ref = torch.nn.functional.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, q, q)), is_causal=True)
    err = float((o.transpose(1, 2).float() - ref.float()).abs().max())
    print("fa4 ok" if err < 0.05 else f"fa4 failed: max error {err}")
except Exception as exc:
    print(f"fa4 failed: {type(exc).__name__}: {str(exc)[:300]}")
PY
