"""The explorer's JSON endpoints: the panel registry, filled by `tilewise.web.panels`, and the GPU list.

No formula lives here or in a panel. A panel function reads its inputs (`Params`), calls the
model functions that own the rule, and returns what the page draws: numbers, and for the
animations the schedule or the steps to play. The page never computes a figure.
"""

from __future__ import annotations

from typing import Any

import tilewise.web.panels  # noqa: F401  (registers every panel)
from tilewise import gpus as _gpus
from tilewise.web.registry import ORDER, PANELS, Panel, available, call, clean, gpu_summary

__all__ = ["ORDER", "PANELS", "Panel", "available", "call", "clean", "gpus_list"]


def gpus_list() -> dict[str, Any]:
    out = []
    for g in _gpus.list():
        d = gpu_summary(g)
        d["peak_tflops_bf16"] = _gpus.peak_flops(g, "bf16") / 1e12 if "bf16" in g.dense_macs_per_tc_per_cycle else None
        d["hbm_tb_s"] = _gpus.bandwidth(g, "hbm") / 1e12
        d["smem_per_block_optin"] = g.smem_per_block_optin
        d["max_threads_per_block"] = g.max_threads_per_block
        d["wgmma"] = g.wgmma
        d["balance_bf16"] = _gpus.balance(g, "hbm", "bf16") if "bf16" in g.dense_macs_per_tc_per_cycle else None
        out.append(d)
    return {"gpus": out, "default": _gpus.DEFAULT_GPU}
