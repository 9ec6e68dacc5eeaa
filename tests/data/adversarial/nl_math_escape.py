# dialect: nki
# family: escape: reach the interpreter's own modules through nkisim's nl module
# task: nki/silu
# expect: rejected
# message: nl.math is nkisim's own, not part of NKI
# nkisim's current nl module imports Python's math for itself; the kernel sees a stand-in that
# holds NKI's names only, and the check in the kernel's child follows `nl.math` before it runs.
import nki
import nki.language as nl


@nki.jit
def kernel(x):
    scale = nl.math.sqrt(2.0)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), scale))
    return out
