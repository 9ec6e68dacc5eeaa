"""aws-neuron-sdk nki/examples getting_started_baremetal: c = a + b for one [P <= 128, F] tile."""

import numpy as np

P = 128
F = 512


def get_inputs():
    a = np.random.randn(P, F).astype(np.float32)
    b = np.random.randn(P, F).astype(np.float32)
    return [a, b]


def forward(a, b):
    return a + b
