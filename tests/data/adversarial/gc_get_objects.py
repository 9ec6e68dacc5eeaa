# dialect: nki-legacy
# family: finding the expected output through gc
# task: nki_legacy/silu
# expect: rejected
# message: import of 'gc' is not allowed
import gc

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    for candidate in gc.get_objects():
        if isinstance(candidate, np.ndarray) and candidate.shape == x.shape:
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=candidate)
            return out
    return x
