"""L2 and HBM: M, hit rate and the balance point (`model.roofline`)."""

from __future__ import annotations

from typing import Any

from tilewise.model import roofline
from tilewise.web.params import Params
from tilewise.web.registry import gpu_summary, panel


@panel(
    "l2",
    "L2 and HBM: M, hit rate and the balance point",
    ("gpu", "m", "hit", "head_dim", "n"),
)
def l2_panel(p: Params) -> dict[str, Any]:
    """`model.roofline.kv_tile_intensity` (N and d cancel, M remains) and `l2_reuse` at a hit
    rate, with utilisation over the hit rate and the needed hit rate over M."""

    g = p.gpu()
    m = p.int("m", 64, 1, 1024)
    hit = p.float("hit", 0.8, 0.0, 0.99)
    d = p.int("head_dim", 128, 16, 512)
    n = p.int("n", 128, 16, 1024)
    kv = roofline.kv_tile_intensity(m, n, d, "bf16")
    cur = roofline.l2_reuse(kv.intensity, hit, g, "bf16")
    hits = [i / 100 for i in range(0, 100)]
    over_hit = [{"hit": h, **roofline.l2_reuse(kv.intensity, h, g, "bf16").to_dict()} for h in hits]
    ms = [8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512]
    over_m = []
    for mm in ms:
        i = roofline.kv_tile_intensity(mm, n, d, "bf16").intensity
        over_m.append({"m": mm, "intensity": i, "needed_hit_rate": roofline.hit_rate_for_compute_roof(i, g, "bf16")})
    return {
        "gpu": gpu_summary(g),
        "kv": kv.to_dict(),
        "current": cur.to_dict(),
        "over_hit": over_hit,
        "over_m": over_m,
    }
