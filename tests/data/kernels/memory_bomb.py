# task: silu
# expect: resource
# message: memory
# memory_mb: 1024
import numpy as np

import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    hoard = []
    while True:
        hoard.append(np.ones((1 << 25,), dtype=np.float32))
    return x
