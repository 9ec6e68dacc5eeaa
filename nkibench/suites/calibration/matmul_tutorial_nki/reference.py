"""result = lhsT.T @ rhs, the NKI matmul tutorial's computation (bfloat16 inputs)."""

import ml_dtypes
import numpy as np

M = 4096
K = 8192
N = 8192


def get_inputs():
    lhsT = np.random.normal(size=(K, M)).astype(ml_dtypes.bfloat16)
    rhs = np.random.normal(size=(K, N)).astype(ml_dtypes.bfloat16)
    return [lhsT, rhs]


def forward(lhsT, rhs):
    return lhsT.astype(np.float32).T @ rhs.astype(np.float32)
