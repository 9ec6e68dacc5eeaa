"""aws-neuron-sdk nki/examples transpose2d: each partition's [F1, F2] row-major block transposed to
[F2, F1] (the entry fixes F1 = 8, F2 = 16)."""

import numpy as np

P = 128
F1 = 8
F2 = 16


def get_inputs():
    x = np.random.randn(P, F1 * F2).astype(np.float32)
    return [x]


def forward(x):
    p = x.shape[0]
    return np.transpose(x.reshape(p, F1, F2), (0, 2, 1)).reshape(p, F1 * F2).copy()
