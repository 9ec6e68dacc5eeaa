"""nki-library core/embeddings/rope_hf, forward, with separate cos/sin [B, S, D] (LNC1).

out = x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2]);
cos and sin broadcast over heads. seq_len must be a multiple of 128."""

import numpy as np

B = 1
HQ = 4
HK = 2
S = 256
D = 128


def get_inputs():
    q = np.random.randn(B, HQ, S, D).astype(np.float32)
    k = np.random.randn(B, HK, S, D).astype(np.float32)
    angle = np.random.uniform(-np.pi, np.pi, size=(B, S, D)).astype(np.float32)
    return [q, k, np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)]


def _rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate((-x[..., half:], x[..., :half]), axis=-1)


def forward(q, k, cos, sin):
    c, s = cos[:, None], sin[:, None]
    return (q * c + _rotate_half(q) * s).astype(np.float32), (k * c + _rotate_half(k) * s).astype(
        np.float32
    )
