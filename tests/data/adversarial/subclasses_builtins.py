# dialect: nki
# family: escape: builtins via __subclasses__
# task: nki/silu
# expect: rejected
# message: no underscore names
# object's subclasses include os._wrap_close, whose __init__'s globals are os's.
import nki
import nki.language as nl


@nki.jit
def kernel(x):
    for cls in ().__class__.__base__.__subclasses__():
        if cls.__name__ == "_wrap_close":
            cls.__init__.__globals__["system"]("id > /tmp/pwned")
    return x
