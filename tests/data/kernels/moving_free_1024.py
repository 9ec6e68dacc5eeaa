# task: matmul
# expect: constraint
# message: moving free size 1024 exceeds the architecture limit of 512
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 1024):
            acc = nl.zeros((128, 1024), nl.float32, buffer=nl.sbuf)
            for k in nl.affine_range(K // 128):
                lhs_t = nl.load_transpose2d(lhs[m * 128:(m + 1) * 128, k * 128:(k + 1) * 128])
                moving = nl.load(rhs[k * 128:(k + 1) * 128, n * 1024:(n + 1) * 1024])
                acc += nisa.nc_matmul(lhs_t, moving)
            nl.store(out[m * 128:(m + 1) * 128, n * 1024:(n + 1) * 1024], value=acc)
    return out
