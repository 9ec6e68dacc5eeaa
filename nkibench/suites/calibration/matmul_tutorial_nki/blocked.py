import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(lhsT, rhs):
    """The tutorial's second optimization: blocks of 2 x 2 output tiles on M and N. The lhsT
    tiles of two rows of tiles and the rhs tiles of two columns are held in SBUF together, so
    every tile fetched from HBM feeds the matmuls of two output tiles."""
    K, M = lhsT.shape
    _, N = rhs.shape
    TM = nl.tile_size.gemm_stationary_fmax  # 128
    TK = nl.tile_size.pmax  # 128
    TN = 512  # one PSUM bank of float32
    BM, BN = 2, 2  # output tiles per block on M and on N
    assert M % (BM * TM) == 0 and K % TK == 0 and N % (BN * TN) == 0
    KT = K // TK
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // (BM * TM)):
        left = nl.ndarray((TK, BM, KT, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for bm in nl.affine_range(BM):
            rows = nl.ds((m * BM + bm) * TM, TM)
            for k in nl.affine_range(KT):
                nisa.dma_copy(dst=left[:, bm, k, :], src=lhsT[nl.ds(k * TK, TK), rows])
        for n in nl.affine_range(N // (BN * TN)):
            right = nl.ndarray((TK, BN, KT, TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for bn in nl.affine_range(BN):
                cols = nl.ds((n * BN + bn) * TN, TN)
                for k in nl.affine_range(KT):
                    nisa.dma_copy(dst=right[:, bn, k, :], src=rhs[nl.ds(k * TK, TK), cols])
            for bm in nl.affine_range(BM):
                for bn in nl.affine_range(BN):
                    acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(KT):
                        nisa.nc_matmul(
                            dst=acc, stationary=left[:, bm, k, :], moving=right[:, bn, k, :]
                        )
                    tile = nl.ndarray((TM, TN), dtype=result.dtype, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=tile, src=acc)
                    rows = nl.ds((m * BM + bm) * TM, TM)
                    cols = nl.ds((n * BN + bn) * TN, TN)
                    nisa.dma_copy(dst=result[rows, cols], src=tile)
    return result
