"""Values of every kind across the phases: a float8 (e4m3fn) matrix with float32 row scales, a
boolean mask and a Python integer in; a bfloat16 matrix and an int32 count out (compared
exactly: task.toml)."""

import torch

M = 64
N = 1000


def get_inputs():
    x = torch.randn(M, N).clamp(-2, 2).to(torch.float8_e4m3fn)  # FlashInfer-Bench's fp8 draw
    scale = torch.rand(M, dtype=torch.float32) + 0.5
    keep = torch.rand(M, N) > 0.5
    return {"x": x, "scale": scale, "keep": keep, "shift": 3}


def forward(x, scale, keep, shift):
    out = torch.where(keep, x * scale[:, None], 0.0)
    kept = keep.sum(dim=1).to(torch.int32) + shift
    return {"out": out, "kept": kept}
