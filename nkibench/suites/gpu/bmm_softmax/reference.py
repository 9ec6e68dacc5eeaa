"""Batched matmul followed by a softmax over the last axis (with max subtraction), bfloat16.

lhs (B, M, K), rhs (B, K, N); scores = lhs @ rhs (B, M, N); out = softmax(scores, axis=-1),
(B, M, N). All row-major. Full shapes: attention probabilities for 16 heads of dimension 128 over
a 4096-token sequence. lhs is scaled by 1/sqrt(K) so the scores have unit variance.
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
    scores = torch.matmul(lhs, rhs)
    shifted = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return shifted / shifted.sum(dim=-1, keepdim=True)
