"""A kernel that never ends (an LLM's loop whose exit condition is never met)."""

import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    n = 0
    while n >= 0:
        n += 1
    return x
