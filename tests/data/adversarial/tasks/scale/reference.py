"""Scale an (ROWS, COLS) matrix by 2. The shape constants are one tuple assignment, which
task.toml's shape sets and roofline formulas use (module_constants and the override in
load_reference both see them)."""

import numpy as np

ROWS, COLS = 512, 1024
SIZE = ROWS * COLS


def get_inputs():
    return [np.random.normal(size=(ROWS, COLS)).astype(np.float32)]


def forward(x):
    return x * 2.0
