"""nki-library core/embeddings/rope (RoPE), contiguous layout, no LNC sharding.

x [D, B, H, S] with x1 = x[:D/2], x2 = x[D/2:] and cos, sin [D/2, B, S]:
    out[:D/2] = x1 * cos - x2 * sin,   out[D/2:] = x1 * sin + x2 * cos
(cos/sin broadcast over H)."""

import numpy as np

D = 128
B = 2
HEADS = 4
S = 128


def get_inputs():
    x = np.random.randn(D, B, HEADS, S).astype(np.float32)
    angle = np.random.uniform(-np.pi, np.pi, size=(D // 2, B, S)).astype(np.float32)
    return [x, np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)]


def forward(x, cos, sin):
    half = x.shape[0] // 2
    x1, x2 = x[:half], x[half:]
    c, s = cos[:, :, None, :], sin[:, :, None, :]
    return np.concatenate((x1 * c - x2 * s, x1 * s + x2 * c), axis=0).astype(np.float32)
