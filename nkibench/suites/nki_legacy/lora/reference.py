"""A LoRA linear layer: x @ w + (x @ a) @ b (rank R, no scaling)."""

import numpy as np

M = 4096
N = 12288
K = 5120
R = 128


def get_inputs():
    x = np.random.normal(size=(M, K)).astype(np.float32)
    w = np.random.normal(size=(K, N)).astype(np.float32)
    a = np.random.normal(size=(K, R)).astype(np.float32)
    b = np.random.normal(size=(R, N)).astype(np.float32)
    return [x, w, a, b]


def forward(x, w, a, b):
    return x @ w + (x @ a) @ b
