"""A reference that takes about a second over its five seeds."""

import time

import numpy as np

N = 64


def get_inputs():
    time.sleep(0.2)
    return [np.random.normal(size=(N, N)).astype(np.float32)]


def forward(x):
    return x
