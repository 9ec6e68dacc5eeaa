# task: matmul
# expect: constraint
# message: cannot read PSUM
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    transposed = nisa.nc_transpose(nl.load(lhs[0:128, 0:128]))  # lands in PSUM
    result = nisa.nc_matmul(transposed, nl.load(rhs[0:128, 0:512]))
    nl.store(out[0:128, 0:512], value=nl.copy(result))
    return out
