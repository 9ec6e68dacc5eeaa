"""Rows of ragged length, as FlashInfer-Bench's ragged batches have them: each row of x holds
`lengths[row]` valid elements (drawn per seed) and the rest is padding. The work a ragged
kernel must do depends on the lengths, not on the shapes: roofline_counts() counts the valid
elements from each seed's inputs, and task.toml's formulas use the count."""

import numpy as np

M = 128
N = 512


def get_inputs():
    x = np.random.normal(size=(M, N)).astype(np.float32)
    lengths = np.random.randint(1, N + 1, size=(M, 1)).astype(np.int32)
    return {"x": x, "lengths": lengths}


def forward(x, lengths):
    valid = np.arange(N)[None, :] < lengths
    return np.where(valid, x, 0.0).astype(np.float32) * 2.0


def roofline_counts(x, lengths):
    return {"valid": lengths.sum()}
