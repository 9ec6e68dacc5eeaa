import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x, w, eps, z, g):
    M, K = x.shape
    _, N = w.shape
    TILE_M = nl.tile_size.gemm_stationary_fmax  # 128
    TILE_K = nl.tile_size.pmax  # 128
    TILE_N = 512  # one PSUM bank of float32
    assert M % TILE_M == 0 and K % TILE_K == 0 and N % TILE_N == 0
    KT = K // TILE_K
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    # the gain runs along K, which lands on partitions once the rows are transposed:
    # gain_cols[p, k] = g[k * 128 + p]
    gain_cols = nl.ndarray((TILE_K, KT), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=gain_cols, src=g.ap(pattern=[[1, TILE_K], [TILE_K, KT]], offset=0))
    for m in nl.affine_range(M // TILE_M):
        rows = nl.ds(m * TILE_M, TILE_M)
        x_tile = nl.ndarray((TILE_M, K), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile, src=x[rows, :])
        z_tile = nl.ndarray((TILE_M, K), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=z_tile, src=z[rows, :])
        y = nl.ndarray((TILE_M, K), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=y, data1=x_tile, data2=z_tile, op=nl.add)
        # 1 / sqrt(sum(y^2) / K + eps) per row
        squares = nl.ndarray((TILE_M, K), dtype=nl.float32, buffer=nl.sbuf)
        sum_sq = nl.ndarray((TILE_M, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(
            dst=squares, op=nl.square, data=y, reduce_op=nl.add, reduce_res=sum_sq
        )
        inv_rms = nl.ndarray((TILE_M, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv_rms, op=nl.rsqrt, data=sum_sq, scale=1.0 / K, bias=eps)
        normed = nl.ndarray((TILE_M, K), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=normed, data=y, op0=nl.multiply, operand0=inv_rms)
        # transpose to [K, M] blocks; the gain is applied while leaving PSUM
        normed_t = nl.ndarray((TILE_K, KT, TILE_M), dtype=nl.float32, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            flipped = nl.ndarray((TILE_K, TILE_M), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(dst=flipped, data=normed[:, nl.ds(k * TILE_K, TILE_K)])
            nisa.tensor_scalar(
                dst=normed_t[:, k, :],
                data=flipped,
                op0=nl.multiply,
                operand0=gain_cols[:, k : k + 1],
            )
        for n in nl.affine_range(N // TILE_N):
            cols = nl.ds(n * TILE_N, TILE_N)
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                w_tile = nl.ndarray((TILE_K, TILE_N), dtype=w.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=w_tile, src=w[nl.ds(k * TILE_K, TILE_K), cols])
                nisa.nc_matmul(dst=acc, stationary=normed_t[:, k, :], moving=w_tile)
            result = nl.ndarray((TILE_M, TILE_N), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=result, src=acc)
            nisa.dma_copy(dst=out[rows, cols], src=result)
    return out
