"""lhsT.T @ rhs: the contraction dimension K comes first in both inputs."""

import numpy as np

M = 256
K = 512
N = 1024


def get_inputs():
    lhsT = np.random.normal(size=(K, M)).astype(np.float32)
    rhs = np.random.normal(size=(K, N)).astype(np.float32)
    return [lhsT, rhs]


def forward(lhsT, rhs):
    return lhsT.T @ rhs
