# task: silu
# expect: rejected
# message: import of 'reference' is not allowed
# Copies the reference's answer instead of computing it.
import reference

import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    return reference.forward(x)
