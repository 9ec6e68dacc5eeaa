import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(lhs, rhs):
    B, M, K = lhs.shape
    _, _, N = rhs.shape
    assert K <= nl.tile_size.pmax
    out = nl.ndarray((B, M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    TILE_M, TILE_N = 128, 512
    for b in nl.affine_range(B):
        # the whole (K, N) right operand of this batch fits in SBUF: K partitions × N
        rhs_tile = nl.load(rhs[b])
        for m in nl.affine_range(M // TILE_M):
            lhs_t = nl.load_transpose2d(lhs[b, m * TILE_M:(m + 1) * TILE_M, :])
            row = nl.ndarray((TILE_M, N), dtype=out.dtype, buffer=nl.sbuf)
            for n in nl.affine_range(N // TILE_N):
                acc = nisa.nc_matmul(lhs_t, rhs_tile[:, n * TILE_N:(n + 1) * TILE_N])
                row[:, n * TILE_N:(n + 1) * TILE_N] = nl.copy(acc, dtype=out.dtype)
            nl.store(out[b, m * TILE_M:(m + 1) * TILE_M, :], value=row)
    return out
