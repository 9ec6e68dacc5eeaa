"""A LoRA linear layer in bfloat16: out = x @ w + (x @ a) @ b (rank R, no scaling).

x (M, K), w (K, N), a (K, R), b (R, N), all row-major; out (M, N). Full shapes are the NKI
task's: 4096 tokens through a 5120 -> 12288 projection with a rank-128 adapter. w and a are
scaled by 1/sqrt(K) and b by 1/sqrt(R), so both terms have unit variance.
"""

import math

import torch

M = 4096
N = 12288
K = 5120
R = 128


def get_inputs():
    x = torch.randn(M, K, dtype=torch.bfloat16)
    w = torch.randn(K, N, dtype=torch.bfloat16) / math.sqrt(K)
    a = torch.randn(K, R, dtype=torch.bfloat16) / math.sqrt(K)
    b = torch.randn(R, N, dtype=torch.bfloat16) / math.sqrt(R)
    return [x, w, a, b]


def forward(x, w, a, b):
    return x @ w + (x @ a) @ b
