# task: silu
# expect: runtime
# message: that no instruction has written
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    scratch = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(M // 128):
        tile = nl.load(x[i * 128:(i + 1) * 128, 0:512])
        # reads scratch, which nothing has written yet
        nl.store(out[i * 128:(i + 1) * 128, 0:512], value=nl.add(tile, scratch))
    return out
