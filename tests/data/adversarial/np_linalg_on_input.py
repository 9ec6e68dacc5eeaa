# dialect: nki
# family: library fallback: np.linalg inside an NKI kernel
# task: nki/silu
# expect: runtime
# message: NumPy functions cannot run on NKI tensors
import numpy as np

import nki
import nki.language as nl


@nki.jit
def kernel(x):
    scale = np.linalg.norm(x)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    return out
