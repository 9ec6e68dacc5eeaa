# dialect: nki-legacy
# family: escape: builtins held by a numpy module
# task: nki_legacy/silu
# expect: rejected
# message: `.builtins` is the standard library's builtins module
import numpy as np

import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    secrets = np.ma.core.builtins.open("/proc/1/environ").read()
    raise RuntimeError(secrets)
