# task: rmsnorm_matmul
# expect: constraint
# message: axis 0 is the partition dimension
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x, w):
    M, K = x.shape
    _, N = w.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    rows = nl.load(x[0:128, :])
    column_sums = nl.sum(nl.square(rows), axis=0)
    nl.store(out[0:1, 0:K], value=column_sums)
    return out
