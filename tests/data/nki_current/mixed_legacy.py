"""A current kernel that also imports legacy NKI: refused when it loads."""

import neuronxcc.nki.language as legacy_nl  # noqa: F401  # BUG
import nki


@nki.jit
def kernel(a):
    return a
