import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    TILE_M = nl.tile_size.gemm_stationary_fmax  # 128: stationary free size
    TILE_K = nl.tile_size.pmax  # 128: contraction on partitions
    TILE_N = 512  # one PSUM bank of float32
    assert M % TILE_M == 0 and K % TILE_K == 0 and N % TILE_N == 0
    KT = K // TILE_K
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        rows = nl.ds(m * TILE_M, TILE_M)
        # this row strip of lhs, transposed once into [K on partitions, kt, M] for TensorE
        strip = nl.ndarray((TILE_M, K), dtype=lhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=strip, src=lhs[rows, :])
        strip_t = nl.ndarray((TILE_K, KT, TILE_M), dtype=lhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            flipped = nl.ndarray((TILE_K, TILE_M), dtype=lhs.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=flipped, data=strip[:, nl.ds(k * TILE_K, TILE_K)])
            nisa.tensor_copy(dst=strip_t[:, k, :], src=flipped)
        for n in nl.affine_range(N // TILE_N):
            cols = nl.ds(n * TILE_N, TILE_N)
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=rhs_tile, src=rhs[nl.ds(k * TILE_K, TILE_K), cols])
                # the first matmul into acc overwrites it, the others add onto it
                nisa.nc_matmul(dst=acc, stationary=strip_t[:, k, :], moving=rhs_tile)
            result = nl.ndarray((TILE_M, TILE_N), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=result, src=acc)
            nisa.dma_copy(dst=out[rows, cols], src=result)
    return out
