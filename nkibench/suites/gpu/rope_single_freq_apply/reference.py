"""Rotary position embedding, rotate-half convention, with one frequency table shared by
every batch and head.

x: (B, H, N, D) bfloat16 (batch, heads, tokens, head dim), contiguous. cos, sin: (N, D/2)
bfloat16, the table of position n and frequency j (random angles here). With x0 = x[..., :D/2]
and x1 = x[..., D/2:]:

    out[..., :D/2] = x0 * cos - x1 * sin
    out[..., D/2:] = x0 * sin + x1 * cos

out: (B, H, N, D) bfloat16. (The NKI task's (D, B*H*N) layout with full-size cos/sin is
transposed here into the usual GPU layout, and the table is broadcast over B and H.)
"""

import math

import torch

B = 4
H = 32
N = 8192
D = 128


def get_inputs():
    x = torch.randn(B, H, N, D, dtype=torch.bfloat16)
    angle = torch.rand(N, D // 2, dtype=torch.bfloat16) * (2 * math.pi)
    return [x, torch.cos(angle), torch.sin(angle)]


def forward(x, cos, sin):
    half = x.shape[-1] // 2
    x0, x1 = x[..., :half], x[..., half:]
    return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)
