"""aws-neuron-sdk nki/examples fused_mamba mamba_v3: the Mamba selective scan.

dA[b, c, s, t]  = exp(delta[b, c, t] * A[c, s])
dBu[b, c, s, t] = delta[b, c, t] * u[b, c, t] * B[b, s, t]
h[b, c, s, t]   = dA * h[b, c, s, t - 1] + dBu                      (h[..., -1] = 0)
out[b, c, t]    = sum_s C[b, s, t] * h[b, c, s, t]
"""

import numpy as np

BATCH = 1
CHANNELS = 256
SEQ = 1024
STATE = 8


def get_inputs():
    delta = np.random.uniform(0.0, 0.1, size=(BATCH, CHANNELS, SEQ)).astype(np.float32)
    u = np.random.randn(BATCH, CHANNELS, SEQ).astype(np.float32)
    a = -np.random.uniform(0.5, 1.5, size=(CHANNELS, STATE)).astype(np.float32)
    b = np.random.randn(BATCH, STATE, SEQ).astype(np.float32)
    c = np.random.randn(BATCH, STATE, SEQ).astype(np.float32)
    return [delta, u, a, b, c]


def forward(delta, u, a, b, c):
    delta64, u64 = delta.astype(np.float64), u.astype(np.float64)
    dA = np.exp(delta64[:, :, None, :] * a.astype(np.float64)[None, :, :, None])
    dBu = (delta64 * u64)[:, :, None, :] * b.astype(np.float64)[:, None, :, :]
    h = np.zeros(dA.shape[:3], dtype=np.float64)
    out = np.empty(delta.shape, dtype=np.float64)
    for t in range(delta.shape[2]):
        h = dA[..., t] * h + dBu[..., t]
        out[:, :, t] = np.sum(h * c.astype(np.float64)[:, None, :, t], axis=2)
    return out.astype(np.float32)
