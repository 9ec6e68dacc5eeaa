"""Grouped-query attention without a causal mask, bfloat16.

q (B, N, QH, D), k and v (B, N, KH, D) (token-major, as in the NKI task and flash-attn's API);
query head h uses key/value head h // (QH // KH); scores are scaled by 1/sqrt(D); output
(B, QH, N, D) (head-major, as in the NKI task):
    out[b, h] = softmax(q[b, :, h] @ k[b, :, h // G].T / sqrt(D)) @ v[b, :, h // G]
Full shapes: Llama-3-8B attention (32 query heads, 8 key/value heads of dimension 128) over
4096 tokens, batch 2.
"""

import math

import torch

B = 2
N = 4096
QH = 32
KH = 8
D = 128


def get_inputs():
    q = torch.randn(B, N, QH, D, dtype=torch.bfloat16)
    k = torch.randn(B, N, KH, D, dtype=torch.bfloat16)
    v = torch.randn(B, N, KH, D, dtype=torch.bfloat16)
    return [q, k, v]


def forward(q, k, v):
    group = q.shape[2] // k.shape[2]
    q = q.permute(0, 2, 1, 3)  # (B, QH, N, D)
    k = k.repeat_interleave(group, dim=2).permute(0, 2, 1, 3)  # (B, QH, N, D)
    v = v.repeat_interleave(group, dim=2).permute(0, 2, 1, 3)  # (B, QH, N, D)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    probs = scores / scores.sum(dim=-1, keepdim=True)
    return torch.matmul(probs, v)
