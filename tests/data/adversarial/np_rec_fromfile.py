# dialect: nki
# family: escape: read another file (np.rec.fromfile)
# task: nki/silu
# expect: rejected
# message: `.fromfile` (files, pickles, pointers or code from text) is not allowed
# The expected output sits beside the inputs in the check's work directory (the kernel's
# working directory is a sibling of data/): read it instead of computing it. `fromfile` is
# refused on any object, not only on the numpy module.
import numpy as np

import nki
import nki.language as nl


@nki.jit
def kernel(x):
    answer = np.rec.fromfile("../data/seed_0/expected_0.npy", dtype=np.float32, offset=128)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=answer)
    return out
