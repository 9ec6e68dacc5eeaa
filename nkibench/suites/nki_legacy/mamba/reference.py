"""A selective-scan (Mamba) block: channels C, sequence M, state S.

    dA[c, s, i] = exp(delta[c, i] * a[c, s])
    dBu[c, s, i] = delta[c, i] * b[s, i] * u[c, i]
    h[c, s, i] = dA[c, s, i] * h[c, s, i - 1] + dBu[c, s, i]        (h[..., -1] = 0)
    out[c, i] = sum_s c[s, i] * h[c, s, i]
"""

import numpy as np

M = 7168
C = 256
S = 16


def get_inputs():
    delta = np.random.normal(scale=0.05, size=(C, M)).astype(np.float32)
    u = np.random.normal(scale=0.05, size=(C, M)).astype(np.float32)
    a = np.random.normal(scale=0.05, size=(C, S)).astype(np.float32)
    b = np.random.normal(scale=0.05, size=(S, M)).astype(np.float32)
    c = np.random.normal(scale=0.05, size=(S, M)).astype(np.float32)
    return [delta, u, a, b, c]


def forward(delta, u, a, b, c):
    delta_a = np.exp(delta[:, None, :] * a[:, :, None])
    delta_bu = delta[:, None, :] * b[None, :, :] * u[:, None, :]
    state = np.zeros(delta_a.shape[:2], dtype=np.float32)
    out = np.empty_like(delta)
    for i in range(delta.shape[1]):
        state = delta_a[:, :, i] * state + delta_bu[:, :, i]
        out[:, i] = np.sum(state * c[None, :, i], axis=1)
    return out
