# dialect: nki-legacy
# family: hard-coded shapes
# task: local/scale
# shapes: wide
# expect: incorrect
# message: never written
# Written against the `small` shape set (ROWS, COLS = 128, 512 in the reference's tuple): the
# `wide` set changes both, and the kernel still covers 128 x 512.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

ROWS, COLS = 128, 512


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x[0:ROWS, 0:COLS])
    nl.store(out[0:ROWS, 0:COLS], value=nl.multiply(tile, 2.0))
    return out
