"""nki-library core/subkernels/rmsnorm_tkg (LNC1 layout).

y = x / sqrt(mean(x^2, -1) + eps) * gamma over [B, S, H]; out[p, t, j] = y[t, p * (H/128) + j]
for t in B*S, p in 128, j in H/128."""

import numpy as np

B = 2
S = 8
H = 4096
EPS = 1e-6


def get_inputs():
    x = np.random.randn(B, S, H).astype(np.float32)
    gamma = np.random.randn(1, H).astype(np.float32)
    return [x, gamma]


def forward(x, gamma):
    b, s, h = x.shape
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + EPS) * gamma.astype(np.float64)
    y = y.reshape(b * s, 128, h // 128).transpose(1, 0, 2)
    return np.ascontiguousarray(y).astype(np.float32)
