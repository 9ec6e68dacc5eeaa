# task: silu
# expect: rejected
# message: may only be used as np.<name>
import numpy as np

import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    sneaky = np
    sneaky.load("/etc/passwd")
    return x
