"""Masked rows: out[i, j] = x[i, j] where j < lengths[i], else 0, over an (M, N) float32
matrix with one integer length per row (ragged rows packed into a padded matrix, as a
batch of sequences of different lengths is).

x: (M, N) float32. lengths: (M,) int32, each in [0, N], drawn per seed. out: (M, N) float32.
"""

import torch

M = 8192
N = 16384


def get_inputs():
    x = torch.randn(M, N, dtype=torch.float32)
    lengths = torch.randint(0, N + 1, (M,), dtype=torch.int32)
    return [x, lengths]


def forward(x, lengths):
    columns = torch.arange(x.shape[1], device=x.device)
    keep = columns[None, :] < lengths.to(x.device)[:, None]
    return torch.where(keep, x, torch.zeros_like(x))
