# dialect: nki
# family: escape: read another file (np.load reached through numpy itself)
# task: nki/silu
# expect: rejected
# message: `.load` (files, pickles or pointers) is not allowed
# numpy.ma.core imports numpy as `np`: numpy's file functions are refused anywhere under numpy.
import numpy as np

import nki
import nki.language as nl


@nki.jit
def kernel(x):
    answer = np.ma.core.np.load("../data/seed_0/expected_0.npy")
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=answer)
    return out
