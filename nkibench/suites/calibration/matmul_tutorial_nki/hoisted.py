import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(lhsT, rhs):
    """The tutorial's first optimization: the loads leave the contraction loop. A column of
    lhsT tiles (all of K for 128 rows of the result) is fetched once per row of output tiles,
    a column of rhs tiles once per output tile, and the matmuls then read only SBUF."""
    K, M = lhsT.shape
    _, N = rhs.shape
    TM = nl.tile_size.gemm_stationary_fmax  # 128
    TK = nl.tile_size.pmax  # 128
    TN = 512  # one PSUM bank of float32
    assert M % TM == 0 and K % TK == 0 and N % TN == 0
    KT = K // TK
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        left = nl.ndarray((TK, KT, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            nisa.dma_copy(dst=left[:, k, :], src=lhsT[nl.ds(k * TK, TK), nl.ds(m * TM, TM)])
        for n in nl.affine_range(N // TN):
            right = nl.ndarray((TK, KT, TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(KT):
                nisa.dma_copy(dst=right[:, k, :], src=rhs[nl.ds(k * TK, TK), nl.ds(n * TN, TN)])
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                nisa.nc_matmul(dst=acc, stationary=left[:, k, :], moving=right[:, k, :])
            tile = nl.ndarray((TM, TN), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=tile, src=acc)
            nisa.dma_copy(dst=result[nl.ds(m * TM, TM), nl.ds(n * TN, TN)], src=tile)
    return result
