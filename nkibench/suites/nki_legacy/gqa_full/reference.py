"""Grouped-query attention without a causal mask: q (B, N, QH, D), k and v (B, N, KH, D);
query head h uses key/value head h // (QH / KH); scores scaled by 1/sqrt(D); output
(B, QH, N, D)."""

import numpy as np

B = 1
N = 4096
QH = 16
KH = 8
D = 128


def get_inputs():
    q = np.random.normal(size=(B, N, QH, D)).astype(np.float32)
    k = np.random.normal(size=(B, N, KH, D)).astype(np.float32)
    v = np.random.normal(size=(B, N, KH, D)).astype(np.float32)
    return [q, k, v]


def forward(q, k, v):
    repeat = q.shape[2] // k.shape[2]
    k = np.repeat(k, repeat, axis=2).transpose(0, 2, 3, 1)  # (B, QH, D, N)
    v = np.repeat(v, repeat, axis=2).transpose(0, 2, 1, 3)  # (B, QH, N, D)
    q = q.transpose(0, 2, 1, 3)  # (B, QH, N, D)
    scores = np.matmul(q, k) / np.float32(np.sqrt(q.shape[-1]))
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = scores / scores.sum(axis=-1, keepdims=True)
    return np.matmul(probs, v)
