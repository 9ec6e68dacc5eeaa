"""SwiGLU MLP block in bfloat16: out = (silu(x @ w_gate) * (x @ w_up)) @ w_down.

x (M, K), w_up (K, N), w_down (N, K), w_gate (K, N), all row-major (argument order as in the
NKI task); out (M, K). silu(g) = g / (1 + exp(-g)). Full shapes: 4096 tokens through a
Llama-3-8B MLP (hidden K = 4096, intermediate N = 14336). w_up and w_gate are scaled by
1/sqrt(K) and w_down by 1/sqrt(N), so activations stay of order one.
"""

import math

import torch

M = 4096
N = 14336
K = 4096


def get_inputs():
    x = torch.randn(M, K, dtype=torch.bfloat16)
    w_up = torch.randn(K, N, dtype=torch.bfloat16) / math.sqrt(K)
    w_down = torch.randn(N, K, dtype=torch.bfloat16) / math.sqrt(N)
    w_gate = torch.randn(K, N, dtype=torch.bfloat16) / math.sqrt(K)
    return [x, w_up, w_down, w_gate]


def forward(x, w_up, w_down, w_gate):
    gate = x @ w_gate
    up = x @ w_up
    return (gate / (1.0 + torch.exp(-gate)) * up) @ w_down
