# task: silu
# expect: constraint
# message: mixing basic indexing (slices) and advanced indexing (nl.arange)
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x[nl.arange(128)[:, None], 0:512])
    nl.store(out[0:128, 0:512], value=tile)
    return out
