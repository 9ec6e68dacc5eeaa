"""aws-neuron-sdk nki/examples matrix_multiplication (nki_matmul_block_free_dimension_;
M % 256, N % 1024, K % 128 == 0): result[M, N] = lhsT.T @ rhs, with lhsT [K, M] and rhs [K, N]
in float32."""

import numpy as np

M = 512
N = 2048
K = 256


def get_inputs():
    lhsT = np.random.randn(K, M).astype(np.float32)
    rhs = np.random.randn(K, N).astype(np.float32)
    return [lhsT, rhs]


def forward(lhsT, rhs):
    return (lhsT.astype(np.float64).T @ rhs.astype(np.float64)).astype(np.float32)
