"""y = x + z; RMSNorm of y over K with epsilon and a gain g; then @ w."""

import numpy as np

M = 4096
N = 2048
K = 1024
EPS = 1e-5


def get_inputs():
    x = np.random.normal(size=(M, K)).astype(np.float32)
    w = np.random.normal(size=(K, N)).astype(np.float32)
    z = np.random.normal(size=(M, K)).astype(np.float32)
    g = np.random.normal(size=(K,)).astype(np.float32)
    return [x, w, EPS, z, g]


def forward(x, w, eps, z, g):
    y = x + z
    mean_square = np.sum(y * y / y.shape[1], axis=1, keepdims=True)
    y = y / np.sqrt((mean_square + eps).astype(np.float32))
    return (y * g) @ w
