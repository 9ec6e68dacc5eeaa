"""neuron-agentic-development skills/neuron-nki-writing/examples/simple_matmul.py: result[M, N] =
lhsT.T @ rhs with lhsT [K, M] and rhs [K, N] in float32; any M, N, K (edges bounded with min)."""

import numpy as np

M = 320
N = 1100
K = 384


def get_inputs():
    lhsT = np.random.randn(K, M).astype(np.float32)
    rhs = np.random.randn(K, N).astype(np.float32)
    return [lhsT, rhs]


def forward(lhsT, rhs):
    return (lhsT.astype(np.float64).T @ rhs.astype(np.float64)).astype(np.float32)
