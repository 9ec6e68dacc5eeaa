import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kernel(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    TILE_M = nl.tile_size.gemm_stationary_fmax  # 128
    TILE_K = nl.tile_size.pmax  # 128
    TILE_N = nl.tile_size.gemm_moving_fmax  # 512
    for n in nl.affine_range(N // TILE_N):
        # one column block of rhs stays in SBUF while every row tile of lhs passes by
        rhs_block = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TILE_K):
            rhs_block[k] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
        for m in nl.affine_range(M // TILE_M):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                # the stationary operand holds K on partitions: load lhs tiles transposed
                lhs_t = nl.load_transpose2d(lhs[m * TILE_M:(m + 1) * TILE_M, k * TILE_K:(k + 1) * TILE_K])
                acc += nisa.nc_matmul(lhs_t, rhs_block[k])
            result = nl.copy(acc, dtype=out.dtype)
            nl.store(out[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=result)
    return out
