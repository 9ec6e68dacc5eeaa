# dialect: nki-legacy
# family: escape: read another file (numpy through nkisim's nl module)
# task: nki_legacy/silu
# expect: rejected
# message: nl.np is nkisim's own, not part of NKI
# nkisim's legacy nl module imports numpy as `np`; the kernel sees a stand-in that holds NKI's
# names only, and the check in the kernel's child follows `nl.np` on it before the kernel runs.
# (The current-NKI front has no `np` at all: nl_math_escape.py tries its `math` instead.)
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    answer = nl.np.load("../data/seed_0/expected_0.npy")
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=answer)
    return out
