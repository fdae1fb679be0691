"""Does Triton's automatic warp specialisation compile and help the attention forward loop when both K and V
come through TMA descriptors? Each config is timed as CUDA-graph replays beside SDPA's default backend,
on the same inputs; `err` is the max abs difference from SDPA.

    python benchmarks/probes/attention_ws_probe.py --out benchmarks/results/h200/attention_ws_probe.json

It builds `tilewise.kernels.flash_attention.ForwardConfig`s by hand and reads the kernel's default choice
(`_forward_config`), so it follows those names if they change.
"""

import json
import traceback

import torch
import torch.nn.functional as F
from common import graph_ms, parser, save

from tilewise.kernels.flash_attention import ForwardConfig, _forward_config, attention
from tilewise.model import traffic

SHAPES = [(4, 32, 4096, 128, False), (4, 32, 4096, 128, True), (4, 32, 4096, 64, True), (16, 16, 1024, 128, True)]
TILES = [(128, 128, 8, 3), (128, 128, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (128, 64, 4, 3)]


def main() -> None:
    args = parser(__doc__, "benchmarks/results/h200/attention_ws_probe.json").parse_args()
    res = []
    for b, h, s, d, causal in SHAPES:
        q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        k, v = torch.randn_like(q), torch.randn_like(q)
        flops = traffic.attention_flops(b, h, s, s, d, causal, exact_causal=False)  # SDPA's convention: half the pairs
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        sdpa = graph_ms(lambda q=q, k=k, v=v, c=causal: F.scaled_dot_product_attention(q, k, v, is_causal=c), rep=60)
        cands = [("default", _forward_config(d, causal, q.dtype, s))]
        for bm, bn, w, st in TILES:
            for ws in (True, False):
                cfg = ForwardConfig(
                    block_m=bm, block_n=bn, num_warps=w, num_stages=st, use_desc=True, warp_specialize=ws
                )
                cands.append((f"{bm}x{bn} w{w} s{st} desc ws={ws}", cfg))
        for name, cfg in cands:
            row = {"shape": f"B{b} H{h} S{s} D{d} {'causal' if causal else 'non-causal'}", "config": name}
            try:
                o, _ = attention(q, k, v, causal=causal, config=cfg)
                row["err"] = (o.float() - ref.float()).abs().max().item()
                ms = graph_ms(lambda cfg=cfg, q=q, k=k, v=v, c=causal: attention(q, k, v, causal=c, config=cfg), rep=60)
                row.update(
                    ms=ms, tflops=flops / ms / 1e9, sdpa_ms=sdpa, sdpa_tflops=flops / sdpa / 1e9, vs_sdpa=sdpa / ms
                )
            except Exception as e:  # a config that does not compile is a finding, not a failure
                row["error"] = "".join(traceback.format_exception_only(type(e), e))[-400:]
            res.append(row)
            print(json.dumps(row), flush=True)
            save(args.out, res)
        del q, k, v, ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
