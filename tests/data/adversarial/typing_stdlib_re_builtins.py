# dialect: nki
# family: escape: builtins through a module no name list knows
# task: nki/silu
# expect: rejected
# message: `typing.stdlib_re` is the module re, which a kernel may not use
# typing imports re as `stdlib_re`, re imports enum, and enum imports builtins as `bltns`:
# none of these names is a module's own, so only following the chain on the real modules
# (check_resolved, in the kernel's child, before the kernel runs) sees where it leads.
import typing

import nki
import nki.language as nl


@nki.jit
def kernel(x):
    secrets = typing.stdlib_re.enum.bltns.open("/proc/1/environ").read()
    raise RuntimeError(secrets)
