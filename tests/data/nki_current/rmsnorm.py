"""RMSNorm: x * rsqrt(mean(x^2) + eps) * w, with the weight row broadcast to 128 partitions
by a DMA from an HBM view, and the sum of squares fused into the activation."""

import nki
import nki.isa as nisa
import nki.language as nl

EPS = 1e-6


def mean_square(t, d):
    """A helper function: plain Python composes kernels (NKI 0.7)."""
    squares = nl.ndarray(t.shape, dtype=nl.float32, buffer=nl.sbuf)
    total = nl.ndarray((t.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(
        dst=squares,
        op=nl.square,
        data=t,
        reduce_op=nl.add,
        reduce_res=total,
        reduce_cmd=nisa.reduce_cmd.reset_reduce,
    )
    scaled = nl.ndarray((t.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(
        dst=scaled, data=total, op0=nl.multiply, operand0=1.0 / d, op1=nl.add, operand1=EPS
    )
    return scaled


@nki.jit
def kernel(x, w):
    n, d = x.shape
    out = nl.ndarray((n, d), dtype=x.dtype, buffer=nl.shared_hbm)
    weight = nl.ndarray((128, d), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=weight, src=w.reshape((1, d)).broadcast(0, 128))
    for i in nl.affine_range(n // 128):
        t = nl.ndarray((128, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128 : (i + 1) * 128, :])
        inv_rms = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv_rms, op=nl.rsqrt, data=mean_square(t, d))
        o = nl.ndarray((128, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(
            dst=o, data=t, op0=nl.multiply, operand0=inv_rms, op1=nl.multiply, operand1=weight
        )
        nisa.dma_copy(dst=out[i * 128 : (i + 1) * 128, :], src=o)
    return out
