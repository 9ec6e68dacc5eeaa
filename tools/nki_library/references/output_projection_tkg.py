"""nki-library core/output_projection/output_projection_tkg (no quantization, TRANSPOSE_OUT=False,
LNC1).

attention [D, B, N, S], weight [N*D, H], bias [1, H]:
    out[b*S + s, h] = sum_{n, d} attention[d, b, n, s] * weight[n*D + d, h] + bias[0, h]."""

import numpy as np

D = 128
B = 4
N = 4
S = 2
H = 1024


def get_inputs():
    attention = np.random.uniform(-1, 1, size=(D, B, N, S)).astype(np.float32)
    weight = np.random.uniform(-1, 1, size=(N * D, H)).astype(np.float32)
    bias = np.random.randn(1, H).astype(np.float32)
    return [attention, weight, bias]


def forward(attention, weight, bias):
    d, b, n, s = attention.shape
    a = attention.astype(np.float64).transpose(1, 3, 2, 0).reshape(b * s, n * d)
    return (a @ weight.astype(np.float64) + bias.astype(np.float64)).astype(np.float32)
