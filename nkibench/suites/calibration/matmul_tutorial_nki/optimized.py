import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(lhsT, rhs):
    """The tutorial's third optimization: blocks on M, N and K of 16 x 2 x 8 tiles (2048 x 1024
    x 1024 elements). For each block column of N, a sequential loop over the K blocks fetches
    the block's rhs tiles once and each M block's lhsT tiles with one wide transfer per row of
    128 K; PSUM results are added into one SBUF accumulator per 128-row tile of the result,
    in the result's dtype as the tutorial has it (no cast before the store), laid out
    (128, 2, 512) so that it leaves for HBM in a single 128 x 1024 transfer."""
    K, M = lhsT.shape
    _, N = rhs.shape
    TM = nl.tile_size.gemm_stationary_fmax  # 128
    TK = nl.tile_size.pmax  # 128
    TN = 512  # one PSUM bank of float32
    BM, BN, BK = 16, 2, 8  # tiles per block on M, N and K
    WM, WN, WK = BM * TM, BN * TN, BK * TK  # block widths: 2048, 1024, 1024
    assert M % WM == 0 and N % WN == 0 and K % WK == 0
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for n in nl.affine_range(N // WN):
        cols = nl.ds(n * WN, WN)
        # one accumulator per 128-row tile of this block column, zeroed before the K blocks
        rows_acc = []
        for _ in range(M // TM):  # a Python loop: it builds the list in order
            row_acc = nl.ndarray((TM, BN, TN), dtype=result.dtype, buffer=nl.sbuf)
            nisa.memset(dst=row_acc, value=0.0)
            rows_acc.append(row_acc)
        for k in nl.sequential_range(K // WK):
            # this K block of rhs for the block column: BK transfers of 128 x 1024
            right = nl.ndarray((TK, BK, WN), dtype=rhs.dtype, buffer=nl.sbuf)
            for bk in nl.affine_range(BK):
                krows = nl.ds((k * BK + bk) * TK, TK)
                nisa.dma_copy(dst=right[:, bk, :], src=rhs[krows, cols])
            for m in nl.affine_range(M // WM):
                # this K block of lhsT for the M block: BK transfers of 128 x 2048
                left = nl.ndarray((TK, BK, WM), dtype=lhsT.dtype, buffer=nl.sbuf)
                for bk in nl.affine_range(BK):
                    krows = nl.ds((k * BK + bk) * TK, TK)
                    nisa.dma_copy(dst=left[:, bk, :], src=lhsT[krows, nl.ds(m * WM, WM)])
                for bn in nl.affine_range(BN):
                    for bm in nl.affine_range(BM):
                        acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(BK):
                            nisa.nc_matmul(
                                dst=acc,
                                stationary=left[:, bk, nl.ds(bm * TM, TM)],
                                moving=right[:, bk, nl.ds(bn * TN, TN)],
                            )
                        # add this K block's partial product to the row tile (VectorE)
                        row_acc = rows_acc[m * BM + bm]
                        nisa.tensor_tensor(
                            dst=row_acc[:, bn, :], data1=row_acc[:, bn, :], data2=acc, op=nl.add
                        )
        # every row tile of the block column leaves in one wide transfer
        for t in nl.affine_range(M // TM):
            nisa.dma_copy(dst=result[nl.ds(t * TM, TM), cols], src=rows_acc[t].reshape((TM, WN)))
    return result
