"""nki-library experimental/conv conv1d (stride 1, padding (1, 1), dilation 1, no activation, LNC1).

y[b, o, l] = sum_{k, c} xp[b, c, l + k] * filters[k, c, o] + bias[o], xp = x zero-padded by 1 on
each side of L; L_out = L + 2 - K + 1."""

import numpy as np

B = 2
C_IN = 64
C_OUT = 128
L = 256
K = 3
PAD = 1


def get_inputs():
    x = np.random.randn(B, C_IN, L).astype(np.float32)
    filters = (np.random.randn(K, C_IN, C_OUT) / np.sqrt(K * C_IN)).astype(np.float32)
    bias = np.random.randn(C_OUT).astype(np.float32)
    return [x, filters, bias]


def forward(x, filters, bias):
    b, _, length = x.shape
    k = filters.shape[0]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (PAD, PAD)))
    l_out = length + 2 * PAD - k + 1
    y = np.zeros((b, filters.shape[2], l_out), dtype=np.float64)
    for j in range(k):
        y += np.einsum("bcl,co->bol", xp[:, :, j : j + l_out], filters[j].astype(np.float64))
    return (y + bias.astype(np.float64)[None, :, None]).astype(np.float32)
