import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(lhs_t, rhs):
    K, M = lhs_t.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=rhs.dtype, buffer=nl.shared_hbm)
    TILE_M, TILE_K, TILE_N = 128, 128, 512
    i_k = nl.arange(TILE_K)[:, None]
    i_n = nl.arange(TILE_N)[None, :]
    i_m = nl.arange(TILE_M)[:, None]
    # N is not a multiple of 512: the last column tile is masked
    for n in nl.affine_range((N + TILE_N - 1) // TILE_N):
        cols = n * TILE_N + i_n
        in_range = cols < N
        rhs_block = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TILE_K):
            rhs_block[k] = nl.load(rhs[k * TILE_K + i_k, cols], mask=in_range)
        for m in nl.affine_range(M // TILE_M):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                # lhs_t already holds K first: its tiles are the stationary operand as stored
                stationary = nl.load(lhs_t[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                acc += nisa.nc_matmul(stationary, rhs_block[k], mask=in_range)
            result = nl.copy(acc, dtype=out.dtype, mask=in_range)
            nl.store(out[m * TILE_M + i_m, cols], value=result, mask=in_range)
    return out
