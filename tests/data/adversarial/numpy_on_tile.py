# dialect: nki-legacy
# family: library fallback: NumPy compute inside an NKI kernel
# task: nki_legacy/silu
# expect: runtime
# message: NumPy functions cannot run on NKI tensors
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(M // 128):
        tile = nl.load(x[i * 128 : (i + 1) * 128, 0:N])
        nl.store(out[i * 128 : (i + 1) * 128, 0:N], value=np.asarray(tile) / (1.0 + np.exp(-np.asarray(tile))))
    return out
