import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(lhsT, rhs):
    """result = lhsT.T @ rhs, one 128 x 512 output tile at a time: the tutorial's tiled step,
    which fetches both operand tiles from HBM again for every matmul."""
    K, M = lhsT.shape
    _, N = rhs.shape
    TM = nl.tile_size.gemm_stationary_fmax  # 128 columns of the stationary operand
    TK = nl.tile_size.pmax  # 128: the contraction runs over the partitions
    TN = 512  # one PSUM bank of float32 per output tile, on every target
    assert M % TM == 0 and K % TK == 0 and N % TN == 0
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                # both operands are loaded inside the contraction loop
                left = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                right = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=left, src=lhsT[nl.ds(k * TK, TK), nl.ds(m * TM, TM)])
                nisa.dma_copy(dst=right, src=rhs[nl.ds(k * TK, TK), nl.ds(n * TN, TN)])
                # the first matmul into acc overwrites it, the later ones add to it
                nisa.nc_matmul(dst=acc, stationary=left, moving=right)
            tile = nl.ndarray((TM, TN), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=tile, src=acc)  # PSUM -> SBUF, cast to bfloat16
            nisa.dma_copy(dst=result[nl.ds(m * TM, TM), nl.ds(n * TN, TN)], src=tile)
    return result
