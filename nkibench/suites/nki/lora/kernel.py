import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x, w, a, b):
    M, K = x.shape
    _, N = w.shape
    _, R = a.shape
    TILE_M = nl.tile_size.gemm_stationary_fmax  # 128
    TILE_K = nl.tile_size.pmax  # 128
    TILE_N = 512  # one PSUM bank of float32
    assert R <= nl.tile_size.pmax
    assert M % TILE_M == 0 and K % TILE_K == 0 and N % TILE_N == 0
    KT = K // TILE_K
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    # the low-rank factors stay in SBUF: a as [128, kt, R], b as [R, N]
    a_tiles = nl.ndarray((TILE_K, KT, R), dtype=a.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        nisa.dma_copy(dst=a_tiles[:, k, :], src=a[nl.ds(k * TILE_K, TILE_K), :])
    b_tile = nl.ndarray((R, N), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=b_tile, src=b)
    for m in nl.affine_range(M // TILE_M):
        rows = nl.ds(m * TILE_M, TILE_M)
        # x rows transposed once into [K on partitions, kt, M]
        x_tile = nl.ndarray((TILE_M, K), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile, src=x[rows, :])
        x_t = nl.ndarray((TILE_K, KT, TILE_M), dtype=x.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            flipped = nl.ndarray((TILE_K, TILE_M), dtype=x.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=flipped, data=x_tile[:, nl.ds(k * TILE_K, TILE_K)])
            nisa.tensor_copy(dst=x_t[:, k, :], src=flipped)
        # (x a)^T = a^T x^T for these rows, [R, 128]: stationary a (K, R), moving x^T (K, M)
        xa_psum = nl.ndarray((R, TILE_M), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(KT):
            nisa.nc_matmul(dst=xa_psum, stationary=a_tiles[:, k, :], moving=x_t[:, k, :])
        xa_t = nl.ndarray((R, TILE_M), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=xa_t, src=xa_psum)
        for n in nl.affine_range(N // TILE_N):
            cols = nl.ds(n * TILE_N, TILE_N)
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                w_tile = nl.ndarray((TILE_K, TILE_N), dtype=w.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=w_tile, src=w[nl.ds(k * TILE_K, TILE_K), cols])
                nisa.nc_matmul(dst=acc, stationary=x_t[:, k, :], moving=w_tile)
            # + (x a) @ b, accumulated into the same PSUM tile
            nisa.nc_matmul(dst=acc, stationary=xa_t, moving=b_tile[:, cols])
            result = nl.ndarray((TILE_M, TILE_N), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=result, src=acc)
            nisa.dma_copy(dst=out[rows, cols], src=result)
    return out
