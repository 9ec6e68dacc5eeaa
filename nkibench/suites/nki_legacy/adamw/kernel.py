import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

LR = 1e-3
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8
WEIGHT_DECAY = 0.01


@nki.jit
def kernel(theta, grad, m, v):
    M, N = theta.shape
    out = nl.ndarray((M, N), dtype=theta.dtype, buffer=nl.shared_hbm)
    cols = 1024
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    # M need not be a multiple of 128: the last row tile is masked
    for i in nl.affine_range((M + 127) // 128):
        rows = i * 128 + i_p
        valid = rows < M
        for j in nl.affine_range(N // cols):
            col = j * cols + i_f
            t = nl.load(theta[rows, col], mask=valid)
            g = nl.load(grad[rows, col], mask=valid)
            m_t = nl.load(m[rows, col], mask=valid)
            v_t = nl.load(v[rows, col], mask=valid)
            t = nisa.tensor_scalar(data=t, op0=nl.multiply, operand0=1.0 - LR * WEIGHT_DECAY, mask=valid)
            m_new = nl.add(
                nl.multiply(m_t, BETA1, mask=valid), nl.multiply(g, 1.0 - BETA1, mask=valid), mask=valid
            )
            g2 = nl.multiply(g, g, mask=valid)
            v_new = nl.add(
                nl.multiply(v_t, BETA2, mask=valid), nl.multiply(g2, 1.0 - BETA2, mask=valid), mask=valid
            )
            # sqrt(v / (1 - beta2)) + eps, then lr / (1 - beta1) * m / that
            root = nisa.activation(op=nl.sqrt, data=v_new, scale=1.0 / (1.0 - BETA2), mask=valid)
            denominator = nisa.tensor_scalar(data=root, op0=nl.add, operand0=EPS, mask=valid)
            step = nl.multiply(m_new, nisa.reciprocal(denominator, mask=valid), mask=valid)
            result = nl.subtract(
                t, nl.multiply(step, LR / (1.0 - BETA1), mask=valid), mask=valid
            )
            nl.store(out[rows, col], value=result, mask=valid)
    return out
