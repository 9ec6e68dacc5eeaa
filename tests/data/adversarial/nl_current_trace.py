# dialect: nki-legacy
# family: patching the timer (nkisim's cost model)
# task: nki_legacy/silu
# expect: rejected
# message: nl.current is nkisim's own, not part of NKI
# The estimate comes from the simulator's instruction trace: a kernel that empties it would
# be estimated at nothing.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    M, N = x.shape
    out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(M // 128):
        tile = nl.load(x[i * 128 : (i + 1) * 128, 0:N])
        nl.store(out[i * 128 : (i + 1) * 128, 0:N], value=nl.silu(tile))
    nl.current().trace.instructions.clear()
    return out
