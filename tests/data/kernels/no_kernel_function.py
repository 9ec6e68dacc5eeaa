# task: silu
# expect: compile
# message: defines no `kernel`
import neuronxcc.nki as nki


@nki.jit
def silu_kernel(x):
    return x
