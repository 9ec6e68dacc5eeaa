# dialect: nki
# family: reading uninitialised memory that might hold the answer
# task: nki/silu
# expect: incorrect
# message: never written
# A fresh HBM tensor on a device may still hold the last kernel's output; nkisim fills every
# new allocation with a NaN sentinel and counts the elements still holding it.
import nki
import nki.language as nl


@nki.jit
def kernel(x):
    return nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
