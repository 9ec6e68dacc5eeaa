# task: matmul
# expect: constraint
# message: stationary free size 256 exceeds the architecture limit of 128
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    for k in nl.affine_range(K // 128):
        stationary = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
        stationary[:, 0:128] = nl.load_transpose2d(lhs[0:128, k * 128:(k + 1) * 128])
        stationary[:, 128:256] = nl.load_transpose2d(lhs[128:256, k * 128:(k + 1) * 128])
        result = nisa.nc_matmul(stationary, nl.load(rhs[k * 128:(k + 1) * 128, 0:512]))
        nl.store(out[0:128, 0:512], value=nl.copy(result))
    return out
