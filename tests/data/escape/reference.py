"""The escaping kernel's task: SiLU of a small matrix (the kernel never gets that far)."""

import numpy as np

M = 128
N = 512


def get_inputs():
    return [np.random.normal(size=(M, N)).astype(np.float32)]


def forward(x):
    return x / (1.0 + np.exp(-x))
