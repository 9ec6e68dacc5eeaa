"""lhs is stored transposed, (K, M): computes lhs.T @ rhs with rhs (K, N). N is not a
multiple of 512."""

import numpy as np

M = 4096
K = 2048
N = 10944


def get_inputs():
    lhs_t = np.random.normal(size=(K, M)).astype(np.float32)
    rhs = np.random.normal(size=(K, N)).astype(np.float32)
    return [lhs_t, rhs]


def forward(lhs_t, rhs):
    return lhs_t.T @ rhs
