# task: silu
# expect: rejected
# message: import of 'os' is not allowed
import os

import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    while True:
        os.fork()
