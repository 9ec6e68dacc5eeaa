# task: silu
# expect: incorrect
# message: shape [128, 2048] differs from the reference's [256, 2048]
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    out = nl.ndarray((128, N), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out[0:128, :], value=nl.silu(nl.load(x[0:128, :])))
    return out
