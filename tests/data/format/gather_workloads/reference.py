"""A task with two FlashInfer-Bench workloads (workloads.jsonl): each sets the shape constants
(its axes) and the scale (a scalar input); the first takes its row indices from a safetensors
file in the task folder, the second draws them with get_inputs() per seed."""

import torch

M = 64
K = 8
N = 32


def get_inputs():
    table = torch.randn(M, N)
    indices = torch.randint(0, M, (K,), dtype=torch.int32)
    return {"table": table, "indices": indices, "scale": 1.0}


def forward(table, indices, scale):
    return table[indices.long()] * scale
