# task: silu
# expect: compile
# message: SyntaxError
import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    return x +
