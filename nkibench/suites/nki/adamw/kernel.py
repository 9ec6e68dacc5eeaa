import nki
import nki.isa as nisa
import nki.language as nl

LR = 1e-3
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8
WEIGHT_DECAY = 0.01


@nki.jit
def kernel(theta, grad, m, v):
    M, N = theta.shape
    P = nl.tile_size.pmax  # 128 rows per tile
    COLS = 1024  # columns per tile
    assert N % COLS == 0
    out = nl.ndarray((M, N), dtype=theta.dtype, buffer=nl.shared_hbm)
    # M need not be a multiple of 128: the last row tile uses fewer partitions
    for i in nl.affine_range((M + P - 1) // P):
        rows = min(P, M - i * P)
        r = nl.ds(i * P, rows)
        for j in nl.affine_range(N // COLS):
            c = nl.ds(j * COLS, COLS)
            t = nl.ndarray((P, COLS), dtype=nl.float32, buffer=nl.sbuf)
            g = nl.ndarray((P, COLS), dtype=nl.float32, buffer=nl.sbuf)
            m_t = nl.ndarray((P, COLS), dtype=nl.float32, buffer=nl.sbuf)
            v_t = nl.ndarray((P, COLS), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t[0:rows], src=theta[r, c])
            nisa.dma_copy(dst=g[0:rows], src=grad[r, c])
            nisa.dma_copy(dst=m_t[0:rows], src=m[r, c])
            nisa.dma_copy(dst=v_t[0:rows], src=v[r, c])
            # decayed parameter: theta * (1 - lr * wd)
            nisa.tensor_scalar(
                dst=t[0:rows], data=t[0:rows], op0=nl.multiply, operand0=1.0 - LR * WEIGHT_DECAY
            )
            # m' = beta1 * m + (1 - beta1) * g
            m_new = nl.ndarray((P, COLS), dtype=nl.float32, buffer=nl.sbuf)
            work = nl.ndarray((P, COLS), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=m_new[0:rows], data=m_t[0:rows], op0=nl.multiply, operand0=BETA1)
            nisa.tensor_scalar(
                dst=work[0:rows], data=g[0:rows], op0=nl.multiply, operand0=1.0 - BETA1
            )
            nisa.tensor_tensor(
                dst=m_new[0:rows], data1=m_new[0:rows], data2=work[0:rows], op=nl.add
            )
            # v' = beta2 * v + (1 - beta2) * g * g
            v_new = nl.ndarray((P, COLS), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=work[0:rows], data1=g[0:rows], data2=g[0:rows], op=nl.multiply)
            nisa.tensor_scalar(
                dst=work[0:rows], data=work[0:rows], op0=nl.multiply, operand0=1.0 - BETA2
            )
            nisa.tensor_scalar(dst=v_new[0:rows], data=v_t[0:rows], op0=nl.multiply, operand0=BETA2)
            nisa.tensor_tensor(
                dst=v_new[0:rows], data1=v_new[0:rows], data2=work[0:rows], op=nl.add
            )
            # 1 / (sqrt(v' / (1 - beta2)) + eps)
            denom = nl.ndarray((P, COLS), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(
                dst=denom[0:rows], op=nl.sqrt, data=v_new[0:rows], scale=1.0 / (1.0 - BETA2)
            )
            nisa.tensor_scalar(dst=denom[0:rows], data=denom[0:rows], op0=nl.add, operand0=EPS)
            nisa.reciprocal(dst=denom[0:rows], data=denom[0:rows])
            # theta' = decayed - lr / (1 - beta1) * m' / denom
            nisa.tensor_tensor(
                dst=work[0:rows], data1=m_new[0:rows], data2=denom[0:rows], op=nl.multiply
            )
            nisa.tensor_scalar(
                dst=work[0:rows], data=work[0:rows], op0=nl.multiply, operand0=LR / (1.0 - BETA1)
            )
            result = nl.ndarray((P, COLS), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(
                dst=result[0:rows], data1=t[0:rows], data2=work[0:rows], op=nl.subtract
            )
            nisa.dma_copy(dst=out[r, c], src=result[0:rows])
    return out
