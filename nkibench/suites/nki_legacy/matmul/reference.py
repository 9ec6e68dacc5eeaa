"""A plain matmul: (M, K) @ (K, N)."""

import numpy as np

M = 4096
N = 12288
K = 5120


def get_inputs():
    lhs = np.random.normal(size=(M, K)).astype(np.float32)
    rhs = np.random.normal(size=(K, N)).astype(np.float32)
    return [lhs, rhs]


def forward(lhs, rhs):
    return lhs @ rhs
