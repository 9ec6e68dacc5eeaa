# dialect: nki
# family: escape: eval through typing.get_type_hints
# task: nki/silu
# expect: rejected
# message: `.get_type_hints` (files, pickles, pointers or code from text) is not allowed
# A string annotation is evaluated by get_type_hints; given a globals dict without
# __builtins__, eval() fills in the real builtins, and the underscore names inside a string
# are invisible to an AST check.
import typing

import nki


def probe(x: "__import__('os').system('id > /tmp/pwned')"):
    return x


@nki.jit
def kernel(x):
    typing.get_type_hints(probe, {})
    return x
