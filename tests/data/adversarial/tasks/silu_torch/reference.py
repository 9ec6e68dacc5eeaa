"""SiLU: out = x / (1 + exp(-x)), elementwise over an (M, N) bfloat16 matrix.

x: (M, N) row-major, e.g. the gate activations of an LLM MLP (M tokens, N intermediate
features). out: (M, N), same dtype as x.
"""

import torch

M = 8192
N = 14336


def get_inputs():
    x = torch.randn(M, N, dtype=torch.bfloat16)
    return [x]


def forward(x):
    return x / (1.0 + torch.exp(-x))
