import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(lhs_t, rhs):
    K, M = lhs_t.shape
    _, N = rhs.shape
    TILE_M = nl.tile_size.gemm_stationary_fmax  # 128
    TILE_K = nl.tile_size.pmax  # 128
    TILE_N = 512  # one PSUM bank of float32
    assert M % TILE_M == 0 and K % TILE_K == 0
    KT = K // TILE_K
    out = nl.ndarray((M, N), dtype=rhs.dtype, buffer=nl.shared_hbm)
    # N need not be a multiple of 512: the last column block is narrower
    for n in nl.affine_range((N + TILE_N - 1) // TILE_N):
        width = min(TILE_N, N - n * TILE_N)
        cols = nl.ds(n * TILE_N, width)
        # this column block of rhs stays in SBUF while every row tile of the output passes
        rhs_block = nl.ndarray((TILE_K, KT, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            nisa.dma_copy(dst=rhs_block[:, k, 0:width], src=rhs[nl.ds(k * TILE_K, TILE_K), cols])
        for m in nl.affine_range(M // TILE_M):
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                # lhs_t holds K first: its tiles are stationary operands as stored
                stationary = nl.ndarray((TILE_K, TILE_M), dtype=lhs_t.dtype, buffer=nl.sbuf)
                nisa.dma_copy(
                    dst=stationary,
                    src=lhs_t[nl.ds(k * TILE_K, TILE_K), nl.ds(m * TILE_M, TILE_M)],
                )
                nisa.nc_matmul(
                    dst=acc[:, 0:width], stationary=stationary, moving=rhs_block[:, k, 0:width]
                )
            result = nl.ndarray((TILE_M, TILE_N), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=result[:, 0:width], src=acc[:, 0:width])
            nisa.dma_copy(dst=out[nl.ds(m * TILE_M, TILE_M), cols], src=result[:, 0:width])
    return out
