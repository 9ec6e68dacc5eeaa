# task: silu
# expect: rejected
# message: `getattr` is not allowed
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    loader = getattr(nl, "__loader__")
    return loader
