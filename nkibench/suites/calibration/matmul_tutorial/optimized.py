import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    TM, TN, TK = 16, 2, 8  # tiles per block on M, N and K
    BLOCK_M, BLOCK_N, BLOCK_K = 128 * TM, 512 * TN, 128 * TK
    NUM_M, NUM_N, NUM_K = M // BLOCK_M, N // BLOCK_N, K // BLOCK_K
    for n in nl.affine_range(NUM_N):
        # partial sums of a column of blocks stay in SBUF across the K blocks
        acc = nl.zeros((NUM_M, TM, TN, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
        for k in nl.sequential_range(NUM_K):
            # wide loads: one row of BLOCK_N (or BLOCK_M) elements per partition
            rhs_tiles = nl.ndarray((TK, nl.par_dim(128), BLOCK_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for bk in nl.affine_range(TK):
                row = (k * TK + bk) * 128
                rhs_tiles[bk] = nl.load(rhs[row : row + 128, n * BLOCK_N : (n + 1) * BLOCK_N])
            for m in nl.affine_range(NUM_M):
                lhsT_tiles = nl.ndarray(
                    (TK, nl.par_dim(128), BLOCK_M), dtype=lhsT.dtype, buffer=nl.sbuf
                )
                for bk in nl.affine_range(TK):
                    row = (k * TK + bk) * 128
                    lhsT_tiles[bk] = nl.load(lhsT[row : row + 128, m * BLOCK_M : (m + 1) * BLOCK_M])
                for bn in nl.affine_range(TN):
                    for bm in nl.affine_range(TM):
                        psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(TK):
                            psum += nisa.nc_matmul(
                                lhsT_tiles[bk, :, bm * 128 : (bm + 1) * 128],
                                rhs_tiles[bk, :, bn * 512 : (bn + 1) * 512],
                            )
                        acc[m, bm, bn] = nl.add(acc[m, bm, bn], psum)
        for m in nl.affine_range(NUM_M):
            for bm in nl.affine_range(TM):
                # both N tiles of a row go out in one store
                packed = nl.ndarray((128, BLOCK_N), dtype=result.dtype, buffer=nl.sbuf)
                for bn in nl.affine_range(TN):
                    packed[:, bn * 512 : (bn + 1) * 512] = nl.copy(
                        acc[m, bm, bn], dtype=result.dtype
                    )
                row = (m * TM + bm) * 128
                nl.store(result[row : row + 128, n * BLOCK_N : (n + 1) * BLOCK_N], value=packed)
    return result
