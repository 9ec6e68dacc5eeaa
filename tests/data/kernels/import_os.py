# task: silu
# expect: rejected
# message: import of 'os' is not allowed
import os

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    os.system("echo hello")
    return x
