"""nki-library experimental/loss cross_entropy_forward (float32, positions_per_batch=16,
chunk_size=1024 fixed by the entry).

lse[i] = log(sum_j exp(logits[i, j])); loss[i] = lse[i] - logits[i, targets[i]]."""

import numpy as np

NPOS = 64
V = 4096


def get_inputs():
    logits = (3.0 * np.random.randn(NPOS, V)).astype(np.float32)
    targets = np.random.randint(0, V, size=(NPOS,)).astype(np.int32)
    return [logits, targets]


def forward(logits, targets):
    x = logits.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    loss = lse - x[np.arange(x.shape[0]), targets]
    return loss.astype(np.float32), lse.astype(np.float32)
