"""y = x @ w + z; RMSNorm of y over N with epsilon and a gain g."""

import numpy as np

M = 4096
N = 2048
K = 2048
EPS = 1e-5


def get_inputs():
    x = np.random.normal(size=(M, K)).astype(np.float32)
    w = np.random.normal(size=(K, N)).astype(np.float32)
    z = np.random.normal(size=(M, N)).astype(np.float32)
    g = np.random.normal(size=(N,)).astype(np.float32)
    return [x, w, EPS, z, g]


def forward(x, w, eps, z, g):
    y = x @ w + z
    rms = np.sqrt(np.mean(y * y, axis=1, keepdims=True) + eps)
    return (y * g / rms).astype(np.float32)
