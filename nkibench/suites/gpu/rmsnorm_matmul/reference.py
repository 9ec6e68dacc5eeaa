"""RMSNorm without gain or epsilon over the rows of x, then a matmul:

    out = (x / sqrt(mean(x^2, over K))) @ w

x: (M, K) bfloat16 activations (M tokens, K hidden), row-major. w: (K, N) bfloat16 weight,
row-major (K x N = a 4096 -> 14336 MLP up projection). out: (M, N) bfloat16.
"""

import math

import torch

M = 8192
N = 14336
K = 4096


def get_inputs():
    x = torch.randn(M, K, dtype=torch.bfloat16)
    w = torch.randn(K, N, dtype=torch.bfloat16) * (1.0 / math.sqrt(K))
    return [x, w]


def forward(x, w):
    rms = torch.sqrt(torch.mean(x * x, dim=1, keepdim=True))
    return (x / rms) @ w
