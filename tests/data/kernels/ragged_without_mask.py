# task: adamw
# expect: runtime
# message: out-of-bounds access
# The row count is rounded up to whole tiles, but the last, partial tile is not masked.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(theta, grad, m, v):
    M, N = theta.shape
    out = nl.ndarray((M, N), dtype=theta.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range((M + 127) // 128):
        t = nl.load(theta[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out
