# dialect: nki
# family: escape: typing.sys.modules["os"]
# task: nki/silu
# expect: rejected
# message: `.sys` is the standard library's sys module
# `import typing` is allowed, and typing holds sys, and sys holds every module loaded.
import typing

import nki
import nki.language as nl


@nki.jit
def kernel(x):
    os = typing.sys.modules["os"]
    os.system("cat /proc/1/environ > /tmp/stolen")
    return x
