"""nki-library core/output_projection/output_projection_cte (no quantization, LNC1).

attention [B, N, D, S], weight [N*D, H], bias [1, H]:
    out[b, s, h] = sum_{n, d} attention[b, n, d, s] * weight[n*D + d, h] + bias[0, h]."""

import numpy as np

B = 1
N = 2
D = 128
S = 512
H = 1024


def get_inputs():
    attention = np.random.uniform(-1, 1, size=(B, N, D, S)).astype(np.float32)
    weight = np.random.uniform(-1, 1, size=(N * D, H)).astype(np.float32)
    bias = np.random.randn(1, H).astype(np.float32)
    return [attention, weight, bias]


def forward(attention, weight, bias):
    b, n, d, s = attention.shape
    a = attention.astype(np.float64).transpose(0, 3, 1, 2).reshape(b, s, n * d)
    return (a @ weight.astype(np.float64) + bias.astype(np.float64)).astype(np.float32)
