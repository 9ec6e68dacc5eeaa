# dialect: nki-legacy
# family: escape: typing.sys.modules["os"]
# task: nki_legacy/silu
# expect: rejected
# message: import of 'typing.sys' is not allowed
# The same door through `from ... import`, which binds sys without writing `.sys`.
from typing import sys

import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    sys.modules["subprocess"].run(["sh", "-c", "id > /tmp/pwned"])
    return x
