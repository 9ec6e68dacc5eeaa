"""Matmul, residual add, then RMSNorm with epsilon and a gain over the output rows:

    y = x @ w + z
    out = y / sqrt(mean(y^2, over N) + eps) * g

x: (M, K) bfloat16 (M tokens), w: (K, N) bfloat16 (an output projection, K = N = 4096),
z: (M, N) bfloat16 residual, g: (N,) bfloat16 gain, eps a float; all row-major.
out: (M, N) bfloat16.
"""

import math

import torch

M = 8192
N = 4096
K = 4096
EPS = 1e-5


def get_inputs():
    x = torch.randn(M, K, dtype=torch.bfloat16)
    w = torch.randn(K, N, dtype=torch.bfloat16) * (1.0 / math.sqrt(K))
    z = torch.randn(M, N, dtype=torch.bfloat16)
    g = 1.0 + 0.1 * torch.randn(N, dtype=torch.bfloat16)
    return [x, w, EPS, z, g]


def forward(x, w, eps, z, g):
    y = x @ w + z
    rms = torch.sqrt(torch.mean(y * y, dim=1, keepdim=True) + eps)
    return y / rms * g
