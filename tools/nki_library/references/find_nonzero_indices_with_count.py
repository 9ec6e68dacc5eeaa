"""nki-library experimental/benchmark/find_nonzero_indices_with_count.

For x of shape [1, T] (float32): out[0, :n] = indices of the nonzeros, out[0, n:T] = -1,
out[0, T] = n; int32."""

import numpy as np

T = 512
DENSITY = 0.25


def get_inputs():
    values = np.random.randn(1, T).astype(np.float32)
    keep = np.random.rand(1, T) < DENSITY
    return [np.where(keep, values, 0.0).astype(np.float32)]


def forward(x):
    t = x.shape[1]
    out = np.full((1, t + 1), -1, dtype=np.int32)
    nz = np.nonzero(x[0])[0]
    out[0, : len(nz)] = nz
    out[0, t] = len(nz)
    return out
