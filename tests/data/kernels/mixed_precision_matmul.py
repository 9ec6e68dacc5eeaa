# task: matmul
# expect: constraint
# message: a float32 operand needs a float32 partner
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    stationary = nl.load_transpose2d(lhs[0:128, 0:128], dtype=nl.bfloat16)
    moving = nl.load(rhs[0:128, 0:512])
    nl.store(out[0:128, 0:512], value=nl.copy(nisa.nc_matmul(stationary, moving)))
    return out
