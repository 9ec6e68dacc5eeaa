import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        # the lhsT column of tiles is loaded once per m, not once per (m, n)
        lhsT_tiles = nl.ndarray((K // 128, nl.par_dim(128), 128), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // 128):
            lhsT_tiles[k] = nl.load(lhsT[k * 128 : (k + 1) * 128, m * 128 : (m + 1) * 128])
        for n in nl.affine_range(N // 512):
            rhs_tiles = nl.ndarray(
                (K // 128, nl.par_dim(128), 512), dtype=rhs.dtype, buffer=nl.sbuf
            )
            for k in nl.affine_range(K // 128):
                rhs_tiles[k] = nl.load(rhs[k * 128 : (k + 1) * 128, n * 512 : (n + 1) * 512])
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                res_psum += nl.matmul(lhsT_tiles[k], rhs_tiles[k], transpose_x=True)
            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], value=res_sb)
    return result
