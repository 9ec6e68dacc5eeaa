"""A plain matmul in bfloat16: out = lhs @ rhs.

lhs (M, K) and rhs (K, N), both row-major; out (M, N). Full shapes: a 4096-token batch through a
5120 -> 12288 projection (the NKI task's shapes). rhs is scaled by 1/sqrt(K) so that out has unit
variance.
"""

import math

import torch

M = 4096
N = 12288
K = 5120


def get_inputs():
    lhs = torch.randn(M, K, dtype=torch.bfloat16)
    rhs = torch.randn(K, N, dtype=torch.bfloat16) / math.sqrt(K)
    return [lhs, rhs]


def forward(lhs, rhs):
    return lhs @ rhs
