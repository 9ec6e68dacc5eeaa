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
    # the gain runs along N (the free axis): the same row on every partition
    gain = nl.ndarray((TILE_M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=gain, src=g.ap(pattern=[[0, TILE_M], [1, N]], offset=0))
    for m in nl.affine_range(M // TILE_M):
        rows = nl.ds(m * TILE_M, TILE_M)
        # x rows transposed into [K on partitions, kt, M] for the stationary operand
        x_tile = nl.ndarray((TILE_M, K), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile, src=x[rows, :])
        x_t = nl.ndarray((TILE_K, KT, TILE_M), dtype=x.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            flipped = nl.ndarray((TILE_K, TILE_M), dtype=x.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=flipped, data=x_tile[:, nl.ds(k * TILE_K, TILE_K)])
            nisa.tensor_copy(dst=x_t[:, k, :], src=flipped)
        # y = x @ w + z for this row tile, [128, N]
        y = nl.ndarray((TILE_M, N), dtype=nl.float32, buffer=nl.sbuf)
        for n in nl.affine_range(N // TILE_N):
            cols = nl.ds(n * TILE_N, TILE_N)
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                w_tile = nl.ndarray((TILE_K, TILE_N), dtype=w.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=w_tile, src=w[nl.ds(k * TILE_K, TILE_K), cols])
                nisa.nc_matmul(dst=acc, stationary=x_t[:, k, :], moving=w_tile)
            residual = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=residual, src=z[rows, cols])
            nisa.tensor_tensor(dst=y[:, cols], data1=acc, data2=residual, op=nl.add)
        # 1 / sqrt(mean(y^2) + eps) per row, then y * that * gain
        squares = nl.ndarray((TILE_M, N), dtype=nl.float32, buffer=nl.sbuf)
        sum_sq = nl.ndarray((TILE_M, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(
            dst=squares, op=nl.square, data=y, reduce_op=nl.add, reduce_res=sum_sq
        )
        inv_rms = nl.ndarray((TILE_M, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv_rms, op=nl.rsqrt, data=sum_sq, scale=1.0 / N, bias=eps)
        normed = nl.ndarray((TILE_M, N), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=normed, data=y, op0=nl.multiply, operand0=inv_rms)
        result = nl.ndarray((TILE_M, N), dtype=out.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=result, data1=normed, data2=gain, op=nl.multiply)
        nisa.dma_copy(dst=out[rows, :], src=result)
    return out
