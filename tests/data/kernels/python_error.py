# task: silu
# expect: runtime
# message: line 14: NameError
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x[0:128, :])
    nl.store(out[0:128, :], value=tile)
    return outt
