import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x, w, eps, z, g):
    M, K = x.shape
    _, N = w.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    TILE_M, TILE_K, TILE_N = 128, 128, 512
    gain = nl.load(g.reshape((1, K))).broadcast_to((TILE_M, K))
    for m in nl.affine_range(M // TILE_M):
        y = nl.add(nl.load(x[m * TILE_M:(m + 1) * TILE_M, :]), nl.load(z[m * TILE_M:(m + 1) * TILE_M, :]))
        mean_square = nl.multiply(nl.sum(nl.square(y), axis=1), 1.0 / K)
        inverse_rms = nl.rsqrt(nl.add(mean_square, eps))
        normed = nl.multiply(nisa.tensor_scalar(data=y, op0=nl.multiply, operand0=inverse_rms), gain)
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
