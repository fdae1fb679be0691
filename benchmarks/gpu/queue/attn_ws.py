"""Session 2: does Triton 3.6's automatic warp specialisation compile and help the forward loop when both K
and V come through TMA descriptors? (Session 1 saw the NVGPUWarpSpecialization pass fail on the loop.)
Times CUDA-graph replays of each config against SDPA's default, writes $OUT_AREA/attn_ws.json."""

import json
import os
import traceback

import torch
import torch.nn.functional as F
from triton.testing import do_bench

from tilewise.kernels.flash_attention import ForwardConfig, _forward_config, attention

OUT = os.environ.get("OUT_AREA", "/tmp")


def graph_ms(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return do_bench(g.replay, warmup=10, rep=60, return_mode="median")


def flops(b, h, s, d, causal):
    f = 4 * b * h * s * s * d
    return f / 2 if causal else f


res = []
for b, h, s, d, causal in [
    (4, 32, 4096, 128, False),
    (4, 32, 4096, 128, True),
    (4, 32, 4096, 64, True),
    (16, 16, 1024, 128, True),
]:
    q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    sdpa = graph_ms(lambda q=q, k=k, v=v, c=causal: F.scaled_dot_product_attention(q, k, v, is_causal=c))
    base = _forward_config(d, causal, q.dtype, s)
    cands = [("default", base)]
    for bm, bn, w, st in [(128, 128, 8, 3), (128, 128, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (128, 64, 4, 3)]:
        for ws in (True, False):
            cands.append((f"{bm}x{bn} w{w} s{st} desc ws={ws}", ForwardConfig(bm, bn, w, st, True, ws)))
    for name, cfg in cands:
        row = {"shape": f"B{b} H{h} S{s} D{d} {'causal' if causal else 'non-causal'}", "config": name}
        try:
            o, _ = attention(q, k, v, causal=causal, config=cfg)
            row["err"] = (o.float() - ref.float()).abs().max().item()
            ms = graph_ms(lambda cfg=cfg, q=q, k=k, v=v, c=causal: attention(q, k, v, causal=c, config=cfg))
            row.update(
                ms=ms,
                tflops=flops(b, h, s, d, causal) / ms / 1e9,
                sdpa_ms=sdpa,
                sdpa_tflops=flops(b, h, s, d, causal) / sdpa / 1e9,
                vs_sdpa=sdpa / ms,
            )
        except Exception as e:
            row["error"] = "".join(traceback.format_exception_only(type(e), e))[-400:]
        res.append(row)
        print(json.dumps(row), flush=True)
        json.dump(res, open(os.path.join(OUT, "attn_ws.json"), "w"), indent=1)
    del q, k, v, ref
    torch.cuda.empty_cache()
