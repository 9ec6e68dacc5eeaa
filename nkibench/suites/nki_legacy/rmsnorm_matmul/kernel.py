import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x, w):
    M, K = x.shape
    _, N = w.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    TILE_M, TILE_K, TILE_N = 128, 128, 512
    for m in nl.affine_range(M // TILE_M):
        rows = nl.load(x[m * TILE_M:(m + 1) * TILE_M, :])
        # 1 / sqrt(mean of squares) per row, then scale the rows
        squares = nisa.activation(op=nl.square, data=rows)
        total = nl.sum(squares, axis=1)
        inverse_rms = nisa.activation(op=nl.rsqrt, data=total, scale=1.0 / K)
        normed = nisa.tensor_scalar(data=rows, op0=nl.multiply, operand0=inverse_rms)
        # contraction runs over K on partitions: transpose the normalised rows, 128 at a time
        normed_t = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_M), dtype=nl.float32, buffer=nl.sbuf)
        for k in nl.affine_range(K // TILE_K):
            normed_t[k] = nl.copy(nisa.nc_transpose(normed[:, k * TILE_K:(k + 1) * TILE_K]))
        for n in nl.affine_range(N // TILE_N):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                w_tile = nl.load(w[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                acc += nisa.nc_matmul(normed_t[k], w_tile)
            nl.store(out[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=nl.copy(acc))
    return out
