# dialect: nki-legacy
# family: escape: writing files
# task: nki_legacy/silu
# expect: rejected
# message: `.tofile` (files, pickles, pointers or code from text) is not allowed
# A file planted in the check's work directory could replace what the comparison reads.
import numpy as np

import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    np.zeros((256, 2048), dtype=np.float32).tofile("../outputs/seed_0/output_0.npy")
    return x
