"""nki-library core/topk rotational_topk (k = 8, sorted, one program; the entry builds the config
as the library's topk() does).

values[b, s, :] = the 8 largest of x[b, s, :] in decreasing order; indices[b, s, :] their
positions (uint32)."""

import numpy as np

B = 2
S = 4
V = 8192
TOPK = 8


def get_inputs():
    # distinct values: a permutation of a wide range, so that no two ties exist
    x = np.stack([np.random.permutation(V) for _ in range(B * S)]).astype(np.float32)
    x = (x / V + 0.001 * np.random.randn(B * S, V)).astype(np.float32).reshape(B, S, V)
    return [x]


def forward(x):
    order = np.argsort(-x, axis=-1, kind="stable")[..., :TOPK]
    values = np.take_along_axis(x, order, axis=-1)
    return values.astype(np.float32), order.astype(np.uint32)
