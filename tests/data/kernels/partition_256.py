# task: silu
# expect: constraint
# message: number of partitions 256 exceeds the architecture limit of 128
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(M // 256):
        tile = nl.load(x[i * 256:(i + 1) * 256, 0:512])
        nl.store(out[i * 256:(i + 1) * 256, 0:512], value=nl.silu(tile))
    return out
