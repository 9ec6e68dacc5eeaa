import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x, w, eps, z, g):
    M, K = x.shape
    _, N = w.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    TILE_M, TILE_K, TILE_N = 128, 128, 512
    gain = nl.load(g.reshape((1, N))).broadcast_to((TILE_M, N))
    for m in nl.affine_range(M // TILE_M):
        x_t = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_M), dtype=x.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TILE_K):
            x_t[k] = nl.load_transpose2d(x[m * TILE_M:(m + 1) * TILE_M, k * TILE_K:(k + 1) * TILE_K])
        y = nl.ndarray((TILE_M, N), dtype=nl.float32, buffer=nl.sbuf)
        for n in nl.affine_range(N // TILE_N):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                w_tile = nl.load(w[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                acc += nisa.nc_matmul(x_t[k], w_tile)
            residual = nl.load(z[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N])
            y[:, n * TILE_N:(n + 1) * TILE_N] = nl.add(acc, residual)
        mean_square = nl.multiply(nl.sum(nl.square(y), axis=1), 1.0 / N)
        inverse_rms = nl.rsqrt(nl.add(mean_square, eps))
        normed = nisa.tensor_scalar(data=y, op0=nl.multiply, operand0=inverse_rms)
        nl.store(out[m * TILE_M:(m + 1) * TILE_M, :], value=nl.multiply(normed, gain))
    return out
