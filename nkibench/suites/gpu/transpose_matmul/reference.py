"""A matmul whose lhs is stored transposed, float32: out = lhs_t.T @ rhs.

lhs_t (K, M) and rhs (K, N), both row-major; out (M, N). Full shapes are the NKI task's:
M = 4096 tokens, K = 2048, N = 10944 (an MLP width that is not a multiple of 512, nor of 128).
rhs is scaled by 1/sqrt(K) so that out has unit variance.
"""

import math

import torch

M = 4096
K = 2048
N = 10944


def get_inputs():
    lhs_t = torch.randn(K, M, dtype=torch.float32)
    rhs = torch.randn(K, N, dtype=torch.float32) / math.sqrt(K)
    return [lhs_t, rhs]


def forward(lhs_t, rhs):
    return lhs_t.T @ rhs
