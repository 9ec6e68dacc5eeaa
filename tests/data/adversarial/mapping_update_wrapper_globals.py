# dialect: nki-legacy
# family: escape: a module's globals by functools.update_wrapper, builtins by mapping pattern
# task: nki_legacy/silu
# expect: rejected
# message: `.update_wrapper` reads (or writes) attributes by names in strings
# update_wrapper copies attributes named in strings from one object to another: a kernel class
# whose `__globals__` is a property with a setter receives typing.cast's globals (typing's
# module namespace), and a mapping pattern takes its `__builtins__` (the real ones) and exec.
import functools
import typing

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KEPT = []


class Sink:
    def keep(self, value):
        KEPT.append(value)

    __globals__ = property(None, keep)


@nki.jit
def kernel(x):
    functools.update_wrapper(Sink(), typing.cast, assigned=("__globals__",), updated=())
    match KEPT:
        case [{"__builtins__": {"exec": run} as real}]:
            run("import os; os.system('id > /tmp/pwned')", {"__builtins__": real})
    return x
