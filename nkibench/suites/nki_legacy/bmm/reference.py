"""Batched matmul: (B, M, K) @ (B, K, N)."""

import numpy as np

B = 16
M = 4096
K = 64
N = 4096


def get_inputs():
    lhs = np.random.normal(size=(B, M, K)).astype(np.float32)
    rhs = np.random.normal(size=(B, K, N)).astype(np.float32)
    return [lhs, rhs]


def forward(lhs, rhs):
    return np.matmul(lhs, rhs)
