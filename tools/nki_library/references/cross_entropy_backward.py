"""nki-library experimental/loss cross_entropy_backward (reduction='mean', float32, not in place,
positions_per_batch=16, chunk_size=1024 fixed by the entry).

grad[i, j] = (exp(logits[i, j] - lse[i]) - [j == targets[i]]) / NPOS, with lse from the forward."""

import numpy as np

NPOS = 64
V = 4096


def get_inputs():
    logits = (3.0 * np.random.randn(NPOS, V)).astype(np.float32)
    targets = np.random.randint(0, V, size=(NPOS,)).astype(np.int32)
    x = logits.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0].astype(np.float32)
    return [logits, targets, lse]


def forward(logits, targets, lse):
    n = logits.shape[0]
    grad = np.exp(logits.astype(np.float64) - lse.astype(np.float64)[:, None])
    grad[np.arange(n), targets] -= 1.0
    return (grad / n).astype(np.float32)
