# dialect: nki-legacy
# family: escape: eval through functools.singledispatch
# task: nki_legacy/silu
# expect: rejected
# message: `.singledispatch` (files, pickles, pointers or code from text) is not allowed
# register() reads the handler's annotations with get_type_hints, which evaluates strings.
import functools

import neuronxcc.nki as nki


def base(x):
    return x


def handler(x: "[c for c in ().__class__.__base__.__subclasses__()][0]"):
    return x


@nki.jit
def kernel(x):
    functools.singledispatch(base).register(handler)
    return x
