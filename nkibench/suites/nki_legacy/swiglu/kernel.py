import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x, w_up, w_down, w_gate):
    M, K = x.shape
    _, N = w_up.shape
    out = nl.ndarray((M, K), dtype=x.dtype, buffer=nl.shared_hbm)
    TILE_M, TILE_K, TILE_N = 128, 128, 512
    for m in nl.affine_range(M // TILE_M):
        x_t = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_M), dtype=x.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TILE_K):
            x_t[k] = nl.load_transpose2d(x[m * TILE_M:(m + 1) * TILE_M, k * TILE_K:(k + 1) * TILE_K])
        # hidden = silu(x w_gate) * (x w_up), one row tile [128, N]
        hidden = nl.ndarray((TILE_M, N), dtype=nl.float32, buffer=nl.sbuf)
        for n in nl.affine_range(N // TILE_N):
            gate = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            up = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                rows = slice(k * TILE_K, (k + 1) * TILE_K)
                cols = slice(n * TILE_N, (n + 1) * TILE_N)
                gate += nisa.nc_matmul(x_t[k], nl.load(w_gate[rows, cols]))
                up += nisa.nc_matmul(x_t[k], nl.load(w_up[rows, cols]))
            activated = nisa.activation(op=nl.silu, data=gate)
            hidden[:, n * TILE_N:(n + 1) * TILE_N] = nl.multiply(activated, up)
        # out = hidden @ w_down: transpose hidden in 128-column blocks
        hidden_t = nl.ndarray((N // TILE_K, nl.par_dim(TILE_K), TILE_M), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(N // TILE_K):
            hidden_t[j] = nl.copy(nisa.nc_transpose(hidden[:, j * TILE_K:(j + 1) * TILE_K]))
        for c in nl.affine_range(K // TILE_N):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for j in nl.affine_range(N // TILE_K):
                w_tile = nl.load(w_down[j * TILE_K:(j + 1) * TILE_K, c * TILE_N:(c + 1) * TILE_N])
                acc += nisa.nc_matmul(hidden_t[j], w_tile)
            nl.store(out[m * TILE_M:(m + 1) * TILE_M, c * TILE_N:(c + 1) * TILE_N], value=nl.copy(acc))
    return out
