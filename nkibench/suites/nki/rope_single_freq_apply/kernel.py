import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x, cos, sin):
    d_head, length = x.shape
    half = d_head // 2
    assert d_head <= nl.tile_size.pmax and d_head % 2 == 0
    assert cos.shape == (half, length) and sin.shape == (half, length)
    WIDTH = 2048  # columns per tile
    assert length % WIDTH == 0
    out = nl.ndarray((d_head, length), dtype=x.dtype, buffer=nl.shared_hbm)
    for s in nl.affine_range(length // WIDTH):
        cols = nl.ds(s * WIDTH, WIDTH)
        # the two halves of x, and the frequency tables, one row per partition
        upper = nl.ndarray((half, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=upper, src=x[0:half, cols])
        lower = nl.ndarray((half, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=lower, src=x[half:d_head, cols])
        c = nl.ndarray((half, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=c, src=cos[:, cols])
        n = nl.ndarray((half, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=n, src=sin[:, cols])
        # first half: upper * cos - lower * sin
        a = nl.ndarray((half, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=a, data1=upper, data2=c, op=nl.multiply)
        bb = nl.ndarray((half, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=bb, data1=lower, data2=n, op=nl.multiply)
        first = nl.ndarray((half, WIDTH), dtype=out.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=first, data1=a, data2=bb, op=nl.subtract)
        # second half: upper * sin + lower * cos
        nisa.tensor_tensor(dst=a, data1=upper, data2=n, op=nl.multiply)
        nisa.tensor_tensor(dst=bb, data1=lower, data2=c, op=nl.multiply)
        second = nl.ndarray((half, WIDTH), dtype=out.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=second, data1=a, data2=bb, op=nl.add)
        nisa.dma_copy(dst=out[0:half, cols], src=first)
        nisa.dma_copy(dst=out[half:d_head, cols], src=second)
    return out
