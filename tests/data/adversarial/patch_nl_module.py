# dialect: nki
# family: patching module attributes
# task: nki/silu
# expect: rejected
# message: `nki.language.affine_range` may not be replaced
# affine_range promises independent iterations, which nkisim checks by running the loop
# backwards; a plain range is never checked.
import nki
import nki.language as nl

nl.affine_range = range


@nki.jit
def kernel(x):
    M, N = x.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(M // 128):
        tile = nl.load(x[i * 128 : (i + 1) * 128, 0:N])
        nl.store(out[i * 128 : (i + 1) * 128, 0:N], value=nl.silu(tile))
    return out
