"""x.T through TensorE (PSUM) and a 32 x 32 block through VectorE (SBUF)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x, small):
    P, F = x.shape
    out = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.shared_hbm)
    out_small = nl.ndarray(
        (small.shape[1], small.shape[0]), dtype=small.dtype, buffer=nl.shared_hbm
    )
    tile = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    flipped = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=flipped, data=tile)
    back = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=back, src=flipped)
    nisa.dma_copy(dst=out, src=back)
    block = nl.ndarray(small.shape, dtype=small.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=block, src=small)
    block_t = nl.ndarray((small.shape[1], small.shape[0]), dtype=small.dtype, buffer=nl.sbuf)
    nisa.nc_transpose(dst=block_t, data=block, engine=nisa.engine.vector)
    nisa.dma_copy(dst=out_small, src=block_t)
    return out, out_small
