"""Outputs by name, as FlashInfer-Bench's definitions give them: forward() returns a dict of
a bfloat16 output and a float32 row sum (the shape of attention's (output, lse) pair)."""

import torch

M = 256
N = 1000


def get_inputs():
    x = torch.randn(M, N, dtype=torch.bfloat16)
    y = torch.randn(M, N, dtype=torch.bfloat16)
    return {"x": x, "y": y, "scale": 0.5}


def forward(x, y, scale):
    out = x * scale + y
    return {"out": out, "row_sum": out.sum(dim=1)}
