# task: silu
# expect: timeout
# message: was killed with its process group
# timeout_s: 3
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    spins = 0
    while True:
        spins += 1
    return x
