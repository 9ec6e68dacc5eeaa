# dialect: nki
# family: library fallback: NumPy on the simulator's storage, by class pattern
# task: nki/silu
# expect: rejected
# message: `.data` is nkisim's own storage behind a tensor, not NKI: move data with nl.load / nl.store (or nisa.dma_copy) and compute with nl.* / nisa.* (read by the class pattern `object(data=...)`)
# nkisim_data_numpy.py without `.data`: the class pattern reads the storage behind the input
# and the output tensors, and NumPy writes the answer straight into the output, with no
# instruction for the simulator to count.
import numpy as np

import nki
import nki.language as nl


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    match (x, out):
        case (object(data=src), object(data=dst)):
            dst[...] = src / (1.0 + np.exp(-src))
    return out
