#!/usr/bin/env bash
# Rows of benchmarks/results/h200/overhead.json: NVIDIA H200, 2026-12-01, torch 2.11.0+cu130, triton 3.6.0,
# host CPU "Intel(R) Xeon(R) Processor" (16 cores). Host cost per call of every op and its torch peer (tiny problems,
# back-to-back calls, one sync), launched through the compiled kernel (the default). Run on a CUDA machine.
set -euo pipefail
tilewise bench overhead --ops empty,launcher,matmul,sum,attention,decode,grouped,moe,flash_ffn,sum_dim,ffn_module,mhmoe --calls 1000 --rounds 3 --json benchmarks/results/h200/overhead.json
