# task: silu
# expect: constraint
# message: expected operand 'src' in hbm
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x[0:128, 0:512])
    again = nl.load(tile)
    nl.store(out[0:128, 0:512], value=again)
    return out
