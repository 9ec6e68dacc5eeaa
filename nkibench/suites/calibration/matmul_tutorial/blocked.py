import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    BM, BN = 2, 2  # tiles per block on M and N: each load serves two tiles' matmuls
    for m in nl.affine_range(M // (128 * BM)):
        lhsT_tiles = nl.ndarray(
            (BM, K // 128, nl.par_dim(128), 128), dtype=lhsT.dtype, buffer=nl.sbuf
        )
        for bm in nl.affine_range(BM):
            for k in nl.affine_range(K // 128):
                row = (m * BM + bm) * 128
                lhsT_tiles[bm, k] = nl.load(lhsT[k * 128 : (k + 1) * 128, row : row + 128])
        for n in nl.affine_range(N // (512 * BN)):
            rhs_tiles = nl.ndarray(
                (BN, K // 128, nl.par_dim(128), 512), dtype=rhs.dtype, buffer=nl.sbuf
            )
            for bn in nl.affine_range(BN):
                for k in nl.affine_range(K // 128):
                    col = (n * BN + bn) * 512
                    rhs_tiles[bn, k] = nl.load(rhs[k * 128 : (k + 1) * 128, col : col + 512])
            for bm in nl.affine_range(BM):
                for bn in nl.affine_range(BN):
                    res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(K // 128):
                        res_psum += nl.matmul(lhsT_tiles[bm, k], rhs_tiles[bn, k], transpose_x=True)
                    res_sb = nl.copy(res_psum, dtype=result.dtype)
                    row, col = (m * BM + bm) * 128, (n * BN + bn) * 512
                    nl.store(result[row : row + 128, col : col + 512], value=res_sb)
    return result
