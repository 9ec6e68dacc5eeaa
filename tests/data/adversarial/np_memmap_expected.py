# dialect: nki
# family: escape: read another file (np.memmap)
# task: nki/silu
# expect: rejected
# message: `.memmap` (files, pickles, pointers or code from text) is not allowed
import numpy as np

import nki
import nki.language as nl


@nki.jit
def kernel(x):
    answer = np.memmap("../data/seed_0/expected_0.npy", dtype=np.float32, mode="r", offset=128)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=answer.reshape(x.shape))
    return out
