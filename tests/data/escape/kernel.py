"""A plain SiLU kernel: it passes the static check, so the task's escaping reference runs."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(M // 128):
        tile = nl.load(x[i * 128 : (i + 1) * 128, 0:N])
        nl.store(out[i * 128 : (i + 1) * 128, 0:N], value=nl.multiply(tile, nl.sigmoid(tile)))
    return out
