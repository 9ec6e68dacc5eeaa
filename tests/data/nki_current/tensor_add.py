"""a + b, tile by tile: dma_copy in, tensor_tensor, dma_copy out."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(a, b):
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        x = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray((128, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a[i * 128 : (i + 1) * 128, :])
        nisa.dma_copy(dst=y, src=b[i * 128 : (i + 1) * 128, :])
        total = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=total, data1=x, data2=y, op=nl.add)
        nisa.dma_copy(dst=out[i * 128 : (i + 1) * 128, :], src=total)
    return out
