# dialect: nki
# family: escape: os.fork / setsid (a process that outlives the check)
# task: nki/silu
# expect: rejected
# message: import from 'os' is not allowed
from os import fork, setsid

import nki


@nki.jit
def kernel(x):
    if fork() == 0:
        setsid()
        while True:
            pass
    return x
