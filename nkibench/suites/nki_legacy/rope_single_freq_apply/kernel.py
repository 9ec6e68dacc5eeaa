import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x, cos, sin):
    d_head, length = x.shape
    half = d_head // 2
    assert d_head <= nl.tile_size.pmax
    assert cos.shape == (half, length) and sin.shape == (half, length)
    out = nl.ndarray((d_head, length), dtype=x.dtype, buffer=nl.shared_hbm)
    width = 2048
    for s in nl.affine_range(length // width):
        cols = slice(s * width, (s + 1) * width)
        upper = nl.load(x[0:half, cols])
        lower = nl.load(x[half:d_head, cols])
        c = nl.load(cos[:, cols])
        n = nl.load(sin[:, cols])
        first = nl.subtract(nl.multiply(upper, c), nl.multiply(lower, n))
        second = nl.add(nl.multiply(upper, n), nl.multiply(lower, c))
        nl.store(out[0:half, cols], value=first)
        nl.store(out[half:d_head, cols], value=second)
    return out
