"""tilewise.advise.inductor: Inductor's Triton mm template choices cut to the model's top-k.

Inductor's objects are stood in for by the attributes the filter reads (template.uid, params.to_kwargs(),
mnk_hinted(), dtype(), nodes()[1].get_stride()); the ranking they must come out in is the model's own,
computed here with predict directly on the kernel-description-free config dicts."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from tilewise.advise import inductor
from tilewise.model.predict import predict


class Inputs:
    def __init__(self, m, n, k, dtype="torch.float16", stride=(4096, 1)):
        self._mnk, self._dt, self._stride = (m, n, k), dtype, stride

    def mnk_hinted(self):
        return self._mnk

    def dtype(self, idx=0):
        return self._dt

    def nodes(self):
        return [NS(get_stride=lambda: (self._mnk[2], 1)), NS(get_stride=lambda: self._stride)]


def choice(uid, bm=64, bn=64, bk=32, st=3, w=4):
    kw = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_stages": st, "num_warps": w,
          "EVEN_K": True, "ALLOW_TF32": False, "USE_FAST_ACCUM": False, "ACC_TYPE": "tl.float32"}  # fmt: skip
    return NS(template=NS(uid=uid), params=NS(to_kwargs=lambda: dict(kw)), kw=kw)


TILES = [(32, 32, 16, 1, 2), (64, 64, 32, 2, 4), (64, 128, 32, 3, 4), (128, 128, 32, 3, 4), (128, 128, 64, 5, 8),
         (128, 256, 64, 4, 8), (64, 64, 128, 5, 4), (256, 256, 128, 4, 8)]  # fmt: skip


@pytest.mark.parametrize("m,n,k", [(4096, 4096, 4096), (16, 8192, 4096), (1000, 333, 77)])
def test_keeps_the_models_top_k_and_every_other_template(m, n, k):
    ktcs = [NS(template=NS(uid="aten::mm"), params=None)] + [choice("triton::mm", *t) for t in TILES]
    ktcs.append(choice("triton::mm_persistent_tma", 128, 128, 64, 3, 8))
    out = inductor.prune(ktcs, Inputs(m, n, k), 3, inductor.description())
    assert out[0] is ktcs[0] and out[-1] is ktcs[-1]
    kept = [c for c in out if c.template.uid == "triton::mm"]
    assert len(kept) == 3
    p = {"m": m, "n": n, "k": k, "dtype": "fp16", "layout": "nn"}

    def ms(c):
        kw = c.kw
        cfg = {"block_m": kw["BLOCK_M"], "block_n": kw["BLOCK_N"], "block_k": kw["BLOCK_K"], "group_m": 8,
               "split_k": 1, "num_warps": kw["num_warps"], "num_stages": kw["num_stages"], "persistent": False,
               "warp_specialize": False, "stream_b": False}  # fmt: skip
        return predict("gemm", p, cfg, "h200").ms

    fitting = [c for c in ktcs[1:-1] if c.kw["BLOCK_M"] * c.kw["BLOCK_N"] / (32 * c.kw["num_warps"]) <= 160
               and c.kw["num_stages"] * (c.kw["BLOCK_M"] + c.kw["BLOCK_N"]) * c.kw["BLOCK_K"] * 2 <= 231424]  # fmt: skip
    assert sorted(map(ms, kept)) == sorted(map(ms, fitting))[:3]
    assert ktcs[8] not in out  # 256 x 256 x 128: 512 accumulator registers a thread, and 4 x 128 KB of ring


def test_layout_from_b_strides_and_bad_dtype():
    assert inductor.problem_of(Inputs(8, 16, 32, stride=(1, 32)))["layout"] == "nt"
    assert inductor.problem_of(Inputs(8, 16, 32, stride=(16, 1)))["layout"] == "nn"
    with pytest.raises(ValueError, match="dtype must be fp16, bf16 or fp32"):
        inductor.problem_of(Inputs(8, 16, 32, dtype="torch.int8"))


def test_installs_as_an_inductor_choices_handler():
    pytest.importorskip("torch")
    from torch._inductor.choices import InductorChoices

    h = inductor.choices(top_k=2)
    assert isinstance(h, InductorChoices) and h.uuid().startswith("tilewise:h200:top2")
