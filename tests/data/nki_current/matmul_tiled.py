"""lhsT.T @ rhs in 128 x 512 output tiles, accumulating over K in PSUM (accumulate=None)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                left = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                right = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(
                    dst=left, src=lhsT[k * TILE_K : (k + 1) * TILE_K, m * TILE_M : (m + 1) * TILE_M]
                )
                nisa.dma_copy(
                    dst=right, src=rhs[k * TILE_K : (k + 1) * TILE_K, n * TILE_N : (n + 1) * TILE_N]
                )
                nisa.nc_matmul(dst=acc, stationary=left, moving=right)
            tile = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=tile, src=acc)
            nisa.dma_copy(
                dst=result[m * TILE_M : (m + 1) * TILE_M, n * TILE_N : (n + 1) * TILE_N], src=tile
            )
    return result
