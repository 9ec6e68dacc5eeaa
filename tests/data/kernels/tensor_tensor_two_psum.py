# task: matmul
# expect: constraint
# message: both inputs are in PSUM
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    stationary = nl.load_transpose2d(lhs[0:128, 0:128])
    first = nisa.nc_matmul(stationary, nl.load(rhs[0:128, 0:512]))
    second = nisa.nc_matmul(stationary, nl.load(rhs[128:256, 0:512]))
    total = nisa.tensor_tensor(first, second, op=nl.add)
    nl.store(out[0:128, 0:512], value=total)
    return out
