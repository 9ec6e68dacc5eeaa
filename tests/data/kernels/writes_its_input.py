# task: silu
# expect: constraint
# message: the kernel writes its input
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    for i in nl.affine_range(M // 128):
        tile = nl.load(x[i * 128:(i + 1) * 128, :])
        nl.store(x[i * 128:(i + 1) * 128, :], value=nl.silu(tile))
    return x
