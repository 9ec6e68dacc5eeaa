# dialect: nki-legacy
# family: escape: reading /proc/<ppid>/environ
# task: nki_legacy/silu
# expect: rejected
# message: `.loadtxt` (files, pickles, pointers or code from text) is not allowed
# The daemon's environment may hold an API key; the sandbox's /proc shows only its own
# processes, but the static check refuses the read before anything runs.
import numpy as np

import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    environ = np.loadtxt("/proc/1/environ", dtype=str, delimiter="\0")
    raise RuntimeError(str(environ))
