"""Inputs by name, as FlashInfer-Bench's definitions give them: get_inputs() returns a dict
(tensors and a Python scalar), forward() and run() take them by keyword."""

import torch

M = 256
N = 1000


def get_inputs():
    x = torch.randn(M, N, dtype=torch.bfloat16)
    y = torch.randn(M, N, dtype=torch.bfloat16)
    return {"x": x, "y": y, "scale": 0.5}


def forward(x, y, scale):
    return x * scale + y
