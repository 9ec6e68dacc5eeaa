"""Rotary embedding, rotate-half convention, on a (D, B*H*N) layout with one frequency table:
out[:D/2] = x0 cos - x1 sin and out[D/2:] = x0 sin + x1 cos, x0 and x1 the two halves of x.
cos and sin are inputs (random here, as in NKIBench)."""

import numpy as np

B = 1
H = 64
N = 4096
D = 128


def get_inputs():
    x = np.random.normal(size=(D, B * H * N)).astype(np.float32)
    cos = np.random.normal(size=(D // 2, B * H * N)).astype(np.float32)
    sin = np.random.normal(size=(D // 2, B * H * N)).astype(np.float32)
    return [x, cos, sin]


def forward(x, cos, sin):
    half = x.shape[0] // 2
    x0, x1 = x[:half], x[half:]
    return np.concatenate([x0 * cos - x1 * sin, x0 * sin + x1 * cos], axis=0)
