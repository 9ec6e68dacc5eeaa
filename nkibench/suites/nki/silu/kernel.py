import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    P = nl.tile_size.pmax  # 128 rows per tile
    F = 1024  # columns per tile
    assert M % P == 0 and N % F == 0
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(M // P):
        for j in nl.affine_range(N // F):
            rows = nl.ds(i * P, P)
            cols = nl.ds(j * F, F)
            x_tile = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=x_tile, src=x[rows, cols])
            # e = exp(-x) on ScalarE
            e = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=e, op=nl.exp, data=x_tile, scale=-1.0)
            # 1 / (1 + e), then x * that, on VectorE
            nisa.tensor_scalar(dst=e, data=e, op0=nl.add, operand0=1.0)
            nisa.reciprocal(dst=e, data=e)
            y = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=y, data1=x_tile, data2=e, op=nl.multiply)
            nisa.dma_copy(dst=out[rows, cols], src=y)
    return out
