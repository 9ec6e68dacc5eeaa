# dialect: nki-legacy
# family: results cached across calls (by shape)
# task: nki_legacy/silu
# seeds: 0, 21
# expect: incorrect
# message: relative L2 error
# The first call's output is kept and returned for every later input of the same shape.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

CACHE = {}


@nki.jit
def kernel(x):
    M, N = x.shape
    if (M, N) in CACHE:
        return CACHE[(M, N)]
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(M // 128):
        tile = nl.load(x[i * 128 : (i + 1) * 128, 0:N])
        nl.store(out[i * 128 : (i + 1) * 128, 0:N], value=nl.silu(tile))
    CACHE[(M, N)] = out
    return out
