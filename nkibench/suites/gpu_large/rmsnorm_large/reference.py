"""RMSNorm over the last dimension, bfloat16 in and out, float32 inside:
    out = x / sqrt(mean(x^2, -1) + EPS) * weight

x: (M, N) row-major, N the normalised features; weight: (N,). Full shapes: 524288 rows of 128
(e.g. per-head q/k normalisation of 4096 tokens x 128 heads of dimension 128): x 128 MiB, a
memory-bound pass with very short rows.
"""

import torch

M = 524288
N = 128
EPS = 1e-6


def get_inputs():
    x = torch.randn(M, N, dtype=torch.bfloat16)
    weight = torch.randn(N, dtype=torch.bfloat16)
    return [x, weight]


def forward(x, weight):
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return (xf * rstd * weight.float()).to(x.dtype)
