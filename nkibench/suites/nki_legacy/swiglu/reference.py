"""SwiGLU MLP: (silu(x @ w_gate) * (x @ w_up)) @ w_down."""

import numpy as np

M = 4096
N = 3072
K = 1024


def get_inputs():
    x = np.random.normal(size=(M, K)).astype(np.float32)
    w_up = np.random.normal(size=(K, N)).astype(np.float32)
    w_down = np.random.normal(size=(N, K)).astype(np.float32)
    w_gate = np.random.normal(size=(K, N)).astype(np.float32)
    return [x, w_up, w_down, w_gate]


def forward(x, w_up, w_down, w_gate):
    gate = x @ w_gate
    up = x @ w_up
    return (gate / (1.0 + np.exp(-gate)) * up) @ w_down
