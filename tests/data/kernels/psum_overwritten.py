# task: matmul
# expect: incorrect
# message: relative L2 error
# `=` instead of `+=`: each K tile overwrites the PSUM accumulator.
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.sequential_range(K // 128):
                lhs_t = nl.load_transpose2d(lhs[m * 128:(m + 1) * 128, k * 128:(k + 1) * 128])
                acc[...] = nisa.nc_matmul(lhs_t, nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512]))
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc))
    return out
