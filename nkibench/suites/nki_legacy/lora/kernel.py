import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x, w, a, b):
    M, K = x.shape
    _, N = w.shape
    _, R = a.shape
    assert R <= nl.tile_size.pmax
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    TILE_M, TILE_K, TILE_N = 128, 128, 512

    # phase 1: (x @ a) transposed, [R, M], kept in SBUF for phase 2
    a_block = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), R), dtype=a.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(K // TILE_K):
        a_block[k] = nl.load(a[k * TILE_K:(k + 1) * TILE_K, :])
    xa_t = nl.ndarray((R, M), dtype=nl.float32, buffer=nl.sbuf)
    for m in nl.affine_range(M // TILE_M):
        xa = nl.zeros((R, TILE_M), nl.float32, buffer=nl.psum)
        for k in nl.affine_range(K // TILE_K):
            x_t = nl.load_transpose2d(x[m * TILE_M:(m + 1) * TILE_M, k * TILE_K:(k + 1) * TILE_K])
            # a^T x^T = (x a)^T: stationary a[k] [K, R], moving x^T [K, M]
            xa += nisa.nc_matmul(a_block[k], x_t)
        xa_t[:, m * TILE_M:(m + 1) * TILE_M] = nl.copy(xa)

    # phase 2: x @ w + (x a) @ b, one column block at a time
    for n in nl.affine_range(N // TILE_N):
        w_block = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_N), dtype=w.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TILE_K):
            w_block[k] = nl.load(w[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
        b_tile = nl.load(b[:, n * TILE_N:(n + 1) * TILE_N])
        for m in nl.affine_range(M // TILE_M):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                x_t = nl.load_transpose2d(x[m * TILE_M:(m + 1) * TILE_M, k * TILE_K:(k + 1) * TILE_K])
                acc += nisa.nc_matmul(x_t, w_block[k])
            acc += nisa.nc_matmul(xa_t[:, m * TILE_M:(m + 1) * TILE_M], b_tile)
            nl.store(out[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=nl.copy(acc))
    return out
