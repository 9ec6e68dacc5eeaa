"""Scale an (ROWS, COLS) matrix by 2: a current-NKI task (kernel.py imports `nki`) for the
neuron backend's tests against the test double of Neuron SDK 2.29 and later."""

import numpy as np

ROWS, COLS = 512, 1024
SIZE = ROWS * COLS


def get_inputs():
    return [np.random.normal(size=(ROWS, COLS)).astype(np.float32)]


def forward(x):
    return x * 2.0
