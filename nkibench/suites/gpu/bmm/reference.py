"""Batched matmul in bfloat16 with a short contraction: out[b] = lhs[b] @ rhs[b].

lhs (B, M, K), rhs (B, K, N), out (B, M, N), all row-major. Full shapes are those of attention
scores for 16 heads of dimension 128 over a 4096-token sequence (K = 128 contraction, so the
(B, M, N) output dominates the memory traffic). lhs is scaled by 1/sqrt(K).
"""

import math

import torch

B = 16
M = 4096
K = 128
N = 4096


def get_inputs():
    lhs = torch.randn(B, M, K, dtype=torch.bfloat16) / math.sqrt(K)
    rhs = torch.randn(B, K, N, dtype=torch.bfloat16)
    return [lhs, rhs]


def forward(lhs, rhs):
    return torch.matmul(lhs, rhs)
