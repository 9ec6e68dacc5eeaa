import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x, w_up, w_down, w_gate):
    M, K = x.shape
    _, N = w_up.shape
    TILE_M = nl.tile_size.gemm_stationary_fmax  # 128
    TILE_K = nl.tile_size.pmax  # 128
    TILE_N = 512  # one PSUM bank of float32
    assert M % TILE_M == 0 and K % TILE_N == 0 and N % TILE_N == 0
    KT = K // TILE_K
    NT = N // TILE_K
    out = nl.ndarray((M, K), dtype=x.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        rows = nl.ds(m * TILE_M, TILE_M)
        x_tile = nl.ndarray((TILE_M, K), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile, src=x[rows, :])
        x_t = nl.ndarray((TILE_K, KT, TILE_M), dtype=x.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            flipped = nl.ndarray((TILE_K, TILE_M), dtype=x.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=flipped, data=x_tile[:, nl.ds(k * TILE_K, TILE_K)])
            nisa.tensor_copy(dst=x_t[:, k, :], src=flipped)
        # hidden = silu(x w_gate) * (x w_up) for this row tile, [128, N]
        hidden = nl.ndarray((TILE_M, N), dtype=nl.float32, buffer=nl.sbuf)
        for n in nl.affine_range(N // TILE_N):
            cols = nl.ds(n * TILE_N, TILE_N)
            gate = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            up = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                ks = nl.ds(k * TILE_K, TILE_K)
                gate_w = nl.ndarray((TILE_K, TILE_N), dtype=w_gate.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=gate_w, src=w_gate[ks, cols])
                nisa.nc_matmul(dst=gate, stationary=x_t[:, k, :], moving=gate_w)
                up_w = nl.ndarray((TILE_K, TILE_N), dtype=w_up.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=up_w, src=w_up[ks, cols])
                nisa.nc_matmul(dst=up, stationary=x_t[:, k, :], moving=up_w)
            activated = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=activated, op=nl.silu, data=gate)
            nisa.tensor_tensor(dst=hidden[:, cols], data1=activated, data2=up, op=nl.multiply)
        # out = hidden @ w_down: hidden transposed in 128-column blocks
        hidden_t = nl.ndarray((TILE_K, NT, TILE_M), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(NT):
            flipped = nl.ndarray((TILE_K, TILE_M), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(dst=flipped, data=hidden[:, nl.ds(j * TILE_K, TILE_K)])
            nisa.tensor_copy(dst=hidden_t[:, j, :], src=flipped)
        for c in nl.affine_range(K // TILE_N):
            cols = nl.ds(c * TILE_N, TILE_N)
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for j in nl.affine_range(NT):
                down_w = nl.ndarray((TILE_K, TILE_N), dtype=w_down.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=down_w, src=w_down[nl.ds(j * TILE_K, TILE_K), cols])
                nisa.nc_matmul(dst=acc, stationary=hidden_t[:, j, :], moving=down_w)
            result = nl.ndarray((TILE_M, TILE_N), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=result, src=acc)
            nisa.dma_copy(dst=out[rows, cols], src=result)
    return out
