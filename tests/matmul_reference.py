"""The specification of the GEMM with its fused epilogue: act(A @ B + bias), in float64.

Kept beside the tests (not in the kernel module): the interpreter tests of `tilewise.kernels.matmul` and the GPU
tests of the Triton and Gluon GEMMs check against it. GELU is the tanh form the kernels' epilogue computes.
"""

from __future__ import annotations

import torch

ACTIVATIONS = ("none", "relu", "gelu", "silu")


def matmul_reference(
    a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None, activation: str = "none"
) -> torch.Tensor:
    """a [M, K] @ b [K, N] (+ bias [N]) then `activation`, in float64 on a's device."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    ref = a.double() @ b.double()
    if bias is not None:
        ref = ref + bias.double()
    if activation == "relu":
        ref = ref.relu()
    elif activation == "gelu":
        ref = torch.nn.functional.gelu(ref, approximate="tanh")
    elif activation == "silu":
        ref = torch.nn.functional.silu(ref)
    return ref
