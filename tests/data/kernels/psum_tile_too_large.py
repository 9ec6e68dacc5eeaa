# task: matmul
# expect: constraint
# message: a PSUM tile holds at most 2048
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 1024), nl.float32, buffer=nl.psum)
    nl.store(out[0:128, 0:1024], value=nl.copy(acc))
    return out
