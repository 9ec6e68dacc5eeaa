# dialect: nki
# family: zeroing or editing inputs
# task: nki/silu
# expect: constraint
# message: the kernel writes its input
# The answer written over the input: a second call would compute silu(silu(x)).
import nki
import nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    for i in nl.affine_range(M // 128):
        tile = nl.load(x[i * 128 : (i + 1) * 128, 0:N])
        nl.store(x[i * 128 : (i + 1) * 128, 0:N], value=nl.silu(tile))
    return x
