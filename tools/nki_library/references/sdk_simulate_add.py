"""aws-neuron-sdk nki/examples simulate: out = a + b for a [128, F] tile (the example uses
128x512)."""

import numpy as np

P = 128
F = 512


def get_inputs():
    a = np.random.rand(P, F).astype(np.float32)
    b = np.random.rand(P, F).astype(np.float32)
    return [a, b]


def forward(a, b):
    return a + b
