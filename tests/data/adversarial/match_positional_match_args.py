# dialect: nki
# family: escape: builtins by positional class pattern (a class's __match_args__)
# task: nki/silu
# expect: rejected
# message: the positional sub-patterns of `case Bound(...)` read the attributes that Bound.__match_args__ lists
# `case Bound(real)` reads the attribute that Bound.__match_args__ names, "__self__", from any
# subject its metaclass lets in: print's builtins module, where no keyword shows the name.
import nki
import nki.language as nl


class Anything(type):
    def __instancecheck__(cls, instance):
        return True


class Bound(metaclass=Anything):
    __match_args__ = ("__self__",)


@nki.jit
def kernel(x):
    match print:
        case Bound(real):
            real.exec("import os; os.system('id > /tmp/pwned')", {"__builtins__": real})
    return x
