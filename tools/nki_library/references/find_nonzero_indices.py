"""nki-library core/subkernels/find_nonzero_indices, run without an SPMD grid (LNC1).

For x of shape [T, C]: indices[c, :n_c] = the t with x[t, c] != 0 in increasing order, the
rest -1; counts[c] = n_c. Both int32 (index_dtype default)."""

import numpy as np

T = 1024
C = 16
DENSITY = 0.3


def get_inputs():
    values = np.random.randn(T, C).astype(np.float32)
    keep = np.random.rand(T, C) < DENSITY
    return [np.where(keep, values, 0.0).astype(np.float32)]


def forward(x):
    t, c = x.shape
    indices = np.full((c, t), -1, dtype=np.int32)
    counts = np.zeros((c,), dtype=np.int32)
    for j in range(c):
        nz = np.nonzero(x[:, j])[0]
        indices[j, : len(nz)] = nz
        counts[j] = len(nz)
    return indices, counts
