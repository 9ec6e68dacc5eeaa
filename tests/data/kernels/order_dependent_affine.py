# task: silu
# expect: constraint
# message: depends on the order of its iterations
# A running total carried across an affine_range loop: iterations are not independent.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    running = nl.zeros((128, N), nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(M // 128):
        tile = nl.silu(nl.load(x[i * 128:(i + 1) * 128, :]))
        running[...] = nl.add(running, tile)
        nl.store(out[i * 128:(i + 1) * 128, :], value=running)
    return out
