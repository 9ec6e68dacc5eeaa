# task: silu
# expect: rejected
# message: `.save` (files, pickles or pointers) is not allowed
import numpy as np

import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    np.save("/tmp/accelopt-negative-corpus-pwned.npy", np.zeros(4))
    return x
