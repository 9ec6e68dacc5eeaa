# dialect: nki
# family: library fallback: NumPy on the simulator's storage
# task: nki/silu
# expect: rejected
# message: `.data` is nkisim's own storage behind a tensor, not NKI
# Writing the answer straight into the output's buffer with NumPy: correct, and the simulator
# counts no instruction, so the cost model would call it free.
import numpy as np

import nki
import nki.language as nl


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    out.data[...] = x.data / (1.0 + np.exp(-x.data))
    return out
