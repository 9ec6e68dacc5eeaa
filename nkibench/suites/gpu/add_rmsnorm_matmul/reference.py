"""Residual add, RMSNorm with epsilon and a gain, then a matmul:

    y = x + z
    out = (y / sqrt(mean(y^2, over K) + eps) * g) @ w

x, z: (M, K) bfloat16 (M tokens, K hidden), g: (K,) bfloat16 gain, w: (K, N) bfloat16
(a fused QKV projection, 4096 -> 6144), eps a float; all row-major. out: (M, N) bfloat16.
"""

import math

import torch

M = 8192
N = 6144
K = 4096
EPS = 1e-5


def get_inputs():
    x = torch.randn(M, K, dtype=torch.bfloat16)
    w = torch.randn(K, N, dtype=torch.bfloat16) * (1.0 / math.sqrt(K))
    z = torch.randn(M, K, dtype=torch.bfloat16)
    g = 1.0 + 0.1 * torch.randn(K, dtype=torch.bfloat16)
    return [x, w, EPS, z, g]


def forward(x, w, eps, z, g):
    y = x + z
    mean_square = torch.mean(y * y, dim=1, keepdim=True)
    y = y / torch.sqrt(mean_square + eps)
    return (y * g) @ w
